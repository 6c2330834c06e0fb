"""TEST DOUBLE: a replayed-conversation environment over a JSON list of ``ReplayItem`` records, and a small world.

``TinyReplayEnvironment`` is what a benchmark module looks like: a name and a reader (``PrefixedReplayEnvironment``
adds a setting of its own). ``tiny_items`` builds
conversations where each user states facts (``"<key> is <value>"``, some changed in a later session) and is
asked about them: free text scored by token F1 and exact match, one multiple-choice question, each categorised.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import ClassVar

from memevo.agents.llm.protocol import ChatClient
from memevo.core.errors import UserInputError
from memevo.environments.capabilities import Capabilities
from memevo.environments.replay import ReplayEnvironment, ReplayItem, ReplayQuestion, ReplaySession
from memevo.environments.runner import EpisodeConfig


class TinyReplayEnvironment(ReplayEnvironment):
    name: ClassVar[str] = "tiny_replay"

    def load_items(self, source: str | Path, *, limit: int | None = None) -> list[ReplayItem]:
        path = Path(source)
        try:
            rows = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as error:
            raise UserInputError(f"cannot read: {error}", source=str(path)) from None
        items = [ReplayItem.model_validate(row) for row in rows]
        return items[:limit] if limit else items


class PrefixedReplayEnvironment(TinyReplayEnvironment):
    """A benchmark with a setting of its own (``id_prefix``, put before every item id): what a new benchmark with
    an option needs is its class and a registry entry."""

    name: ClassVar[str] = "prefixed_replay"
    capabilities: ClassVar[Capabilities] = Capabilities(categories=True, options=("id_prefix",))

    def __init__(self, episode: EpisodeConfig, *, judge: ChatClient | None = None, id_prefix: str = "") -> None:
        super().__init__(episode, judge=judge)
        self.id_prefix = id_prefix

    def load_items(self, source: str | Path, *, limit: int | None = None) -> list[ReplayItem]:
        return [item.model_copy(update={"id": self.id_prefix + item.id})
                for item in super().load_items(source, limit=limit)]


def tiny_items(n: int = 3) -> list[ReplayItem]:
    start = datetime(2024, 3, 1, 9, 0)
    items = []
    for number in range(n):
        pet, city, old_city = f"dog{number}", f"city{number}", f"town{number}"
        sessions = [
            ReplaySession(id="s1", time=start, messages=[
                {"role": "user", "content": f"my pet is {pet}"}, {"role": "assistant", "content": "Nice."},
                {"role": "user", "content": f"my home is {old_city}"}]),
            ReplaySession(id="s2", time=start + timedelta(days=3), messages=[
                {"role": "assistant", "content": "How are you?"},
                {"role": "user", "content": f"my home is {city}"}, {"role": "assistant", "content": "Noted."}]),
        ]
        questions = [
            ReplayQuestion(query="What is my pet?", gold=f"{pet}", category="single-hop", scoring="exact_match"),
            ReplayQuestion(query="Where is my home now?", gold=f"the {city} area", category="temporal",
                           scoring="token_f1"),
            ReplayQuestion(query="Which is my home?", gold=city, choices=[old_city, city, "nowhere"],
                           category="temporal", scoring="choice"),
        ]
        items.append(ReplayItem(id=f"conv-{number}", sessions=sessions, questions=questions,
                                split="train" if number % 2 == 0 else "test"))
    return items
