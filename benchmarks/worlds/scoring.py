"""A memory-types text's noise-free accuracy, worked out from a world's rules, and the oracle: the best text.

The answerer picks the option matching its notes, and option 1 when a needed fact is missing, so a question is
right exactly when every category it needs is kept, or when its answer happens to be option 1. That makes the
noise-free accuracy of any text a function of the categories the writer keeps (``WorldRules.kept``), and the best
reachable accuracy a maximum over the sets of categories one can name (tests check both against real episodes).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations
from statistics import fmean

from benchmarks.worlds.rules import WorldRules
from memevo.environments.amemgym.data.models import Item


def user_accuracy(item: Item, kept: frozenset[str]) -> float:
    """One user's accuracy over every period's questions when the writer keeps ``kept``."""
    right = []
    for period in item.periods:
        for question in item.qas:
            gold = [period.state[category] for category in question.required_info]
            if set(question.required_info) <= kept:
                right.append(1.0)
            else:
                right.append(float(question.answer_choices[0].state == gold))
    return fmean(right)


def accuracy(rules: WorldRules, items: Iterable[Item], memory_types: str) -> float:
    """Mean noise-free accuracy over ``items`` (users) of the memory-types text."""
    kept = rules.kept(memory_types)
    return fmean(user_accuracy(item, kept) for item in items)


@dataclass(frozen=True)
class Oracle:
    memory_types: str
    score: float


def oracle_text(rules: WorldRules, categories: Sequence[str]) -> str:
    return "\n".join(f"- {rules.names[category][0]}" for category in categories)


def oracle(rules: WorldRules, items: Sequence[Item]) -> Oracle:
    """The best memory-types text on ``items``: every set of categories the writer can read, named as it accepts."""
    limit = len(rules.categories) if rules.capacity is None else min(rules.capacity, len(rules.categories))
    best = Oracle("", accuracy(rules, items, ""))
    for size in range(1, limit + 1):
        for chosen in combinations(rules.categories, size):
            text = oracle_text(rules, chosen)
            score = accuracy(rules, items, text)
            if score > best.score:
                best = Oracle(text, score)
    return best
