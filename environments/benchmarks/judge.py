"""An LLM judge for free-text answers, called through the gateway under its own ``judge`` role (so its calls are
cached and counted apart from the agent's).

The judge answers yes or no; a reply that says neither is unreadable and the question stays unscored, rather
than being counted wrong.
"""

from __future__ import annotations

import re

from memevo.agents.lazy_model import LazyModel
from memevo.agents.llm.protocol import ChatClient

_WORD = re.compile(r"[a-z]+")


class Verdict(LazyModel):
    correct: bool | None
    """None: the judge's reply said neither yes nor no."""
    raw: str


def parse_verdict(text: str) -> bool | None:
    """The first yes or no in the reply (``Yes.``, ``no - the date is wrong``); None when it has neither."""
    for word in _WORD.findall(text.lower()):
        if word in ("yes", "correct"):
            return True
        if word in ("no", "wrong", "incorrect"):
            return False
    return None


class Judge:
    """Asks one yes/no question per answer, at temperature 0 and with a short reply budget."""

    def __init__(self, llm: ChatClient, *, max_tokens: int = 16) -> None:
        self.llm = llm
        self.max_tokens = max_tokens

    async def verdict(self, prompt: str) -> Verdict:
        reply = await self.llm.chat([{"role": "user", "content": prompt}], role="judge", temperature=0.0,
                                    max_tokens=self.max_tokens)
        return Verdict(correct=parse_verdict(reply.text), raw=reply.text)

    async def rating(self, prompt: str, *, low: int, high: int) -> int | None:
        """The first whole number from ``low`` to ``high`` in the judge's reply; None when there is none."""
        reply = await self.llm.chat([{"role": "user", "content": prompt}], role="judge", temperature=0.0,
                                    max_tokens=self.max_tokens)
        return parse_rating(reply.text, low=low, high=high)


def parse_rating(text: str, *, low: int, high: int) -> int | None:
    for number in re.findall(r"\d+", text):
        if low <= int(number) <= high:
            return int(number)
    return None
