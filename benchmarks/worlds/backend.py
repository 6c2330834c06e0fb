"""TEST DOUBLE: the scripted LLM of a drawn world (not a model): its writer obeys the world's rules, its proposer
makes one edit per sample from the world's mix of helpful, neutral and harmful edits.

The answerer, the noise and the call accounting are the category double's (tests/doubles/category_backend.py).
The writer reads the memory-types section of the AWI write prompt (between "Worth noting:" and "Rules:") and keeps
the announced facts of the categories ``WorldRules.kept`` returns for it. The proposer lists every one-line edit
of the current text (add a line naming one category by one of its two words, or remove a line; a proposer that
uses feedback adds only categories the feedback names), sorts them by their noise-free effect on all users of the
world (helpful, neutral, harmful), draws a kind with the world's mix (among kinds that have an edit) and one edit
of that kind, from a hash of the request and the sample index, so reruns see the same proposals.
"""

from __future__ import annotations

import json
import re

from benchmarks.worlds.rules import WorldRules
from benchmarks.worlds.scoring import accuracy
from memevo.environments.amemgym.data.models import Item
from tests.doubles.category_backend import ANNOUNCE, CategoryBackend, _unit

SECTION = re.compile(r"Worth noting:\n(.*?)\n\nRules:", re.DOTALL)


class WorldBackend(CategoryBackend):
    """``CategoryBackend`` whose writer and proposer follow ``rules`` (see the module docstring)."""

    def __init__(self, rules: WorldRules, items: list[Item], *, answer_noise: float = 0.0) -> None:
        super().__init__(items, proposer_mode="step", answer_noise=answer_noise, seed=rules.seed)
        self.rules = rules
        self.items = items

    def _write(self, prompt: str) -> str:
        section = SECTION.search(prompt)
        if section is None:
            raise ValueError("world double: the write prompt has no 'Worth noting:' ... 'Rules:' section")
        kept = self.rules.kept(section.group(1))
        conversation: list[dict[str, str]] = next(
            (json.loads(line) for line in prompt.splitlines() if line.startswith('[{"role"')), [])
        notes = {category: value for message in conversation if message["role"] == "user"
                 for category, value in ANNOUNCE.findall(message["content"]) if category in kept}
        return json.dumps(notes)

    def _edits(self, current: str, feedback: str) -> list[tuple[str, str]]:
        """Every one-line edit of ``current``: (new text, the edit as the delta proposer writes it)."""
        lines = current.splitlines()
        edits = [("\n".join(line for j, line in enumerate(lines) if j != i), f"REMOVE {i + 1}")
                 for i, line in enumerate(lines) if line.strip()]
        for category in self.rules.categories:
            if self.rules.uses_feedback and not re.search(rf"\b{category}\b", feedback):
                continue
            for word in self.rules.words(category):
                if not re.search(rf"\b{word}\b", current.lower()):
                    edits.append((f"{current}\n- {word}", f"ADD: - {word}"))
        return edits

    def _step(self, current: str, feedback: str, key: str, sample: int) -> tuple[str, list[str]]:
        before = accuracy(self.rules, self.items, current)
        kinds: dict[str, list[tuple[str, str]]] = {"helpful": [], "neutral": [], "harmful": []}
        for text, edit in self._edits(current, feedback):
            effect = accuracy(self.rules, self.items, text) - before
            kinds["helpful" if effect > 1e-9 else "harmful" if effect < -1e-9 else "neutral"].append((text, edit))
        weights = {"helpful": self.rules.helpful, "neutral": self.rules.neutral, "harmful": self.rules.harmful}
        present = [kind for kind in kinds if kinds[kind]]
        if not present:
            return current, []
        draw = _unit(f"kind|{key}|{sample}") * sum(weights[kind] for kind in present)
        for kind in present:
            draw -= weights[kind]
            if draw < 0:
                break
        pool = kinds[kind]
        text, edit = pool[int(_unit(f"edit|{key}|{sample}") * len(pool))]
        return text, [edit]
