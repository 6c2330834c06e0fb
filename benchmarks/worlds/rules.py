"""A world's rules, drawn at random from its seed: what the writer keeps, how edits combine, noise, the proposer.

Every world announces facts by category ("my <category> is now <value>"), as the category double does
(tests/doubles/category_backend.py). What differs from world to world, drawn here:

- which categories are asked about and how often (0: announced, never asked), and which questions need two
  categories at once (naming one of a pair is worth nothing for them until the other is named too);
- how a category must be named for the writer to keep it: its own word, a synonym, or either;
- pairs of categories that cancel: named together, the writer keeps neither;
- a length cost: the writer reads only the first ``capacity`` lines of the memory types (or all of them);
- the share of agent answers replaced at random (10% to 40%);
- the proposer's mix of helpful, neutral and harmful edits, and whether it reads the feedback.
"""

from __future__ import annotations

import random
import re
from itertools import combinations

from pydantic import BaseModel, ConfigDict

SYNONYMS = {"commute": "travel", "instrument": "music", "beverage": "drink", "genre": "style", "plant": "garden",
            "footwear": "shoes", "pet": "animal", "sport": "exercise", "cuisine": "food", "hobby": "pastime",
            "color": "colour", "city": "town", "vehicle": "ride", "snack": "treat"}
"""Each category of the category double's vocabulary and a second word for it (no word is a value of any)."""
NOISE_RANGE = (0.1, 0.4)


class WorldRules(BaseModel):
    """One world's rules (see the module docstring); ``kept`` applies them to a memory-types text."""

    model_config = ConfigDict(frozen=True)

    seed: int
    questions: dict[str, int]
    """Category -> questions about it per period (0: announced, never asked)."""
    pairs: list[tuple[str, str, int]]
    """Questions per period that need both categories' values."""
    names: dict[str, list[str]]
    """Category -> the words that make the writer keep it."""
    cancels: list[tuple[str, str]]
    capacity: int | None
    """Lines of the memory types the writer reads (None: all)."""
    noise: float
    helpful: float
    neutral: float
    harmful: float
    uses_feedback: bool
    """True: the proposer adds only categories the feedback names; False: any word of the world."""
    seed_lines: list[str]

    @property
    def categories(self) -> list[str]:
        return list(self.questions)

    def words(self, category: str) -> list[str]:
        """Both words for a category, accepted or not (what a proposer may write)."""
        return [category, SYNONYMS[category]]

    def summary(self) -> str:
        asked = sum(count > 0 for count in self.questions.values())
        synonym_only = sum(category not in words for category, words in self.names.items())
        proposer = "feedback-using" if self.uses_feedback else "feedback-blind"
        return (f"noise {self.noise:.2f}; {asked} asked + {len(self.questions) - asked} unasked categories, "
                f"{synonym_only} kept only by synonym; {len(self.pairs)} pair, {len(self.cancels)} cancelling; "
                f"reads {self.capacity or 'all'} lines; {proposer} proposer {self.helpful:.0%}/{self.neutral:.0%}/"
                f"{self.harmful:.0%} helpful/neutral/harmful")

    def kept(self, memory_types: str) -> frozenset[str]:
        """The categories whose facts the writer keeps under this memory-types text."""
        lines = [line.lower() for line in memory_types.splitlines() if line.strip()]
        read = lines[: self.capacity] if self.capacity is not None else lines
        named = {category for category in self.categories
                 if any(re.search(rf"\b{word}\b", line) for line in read for word in self.names[category])}
        for first, second in self.cancels:
            if first in named and second in named:
                named -= {first, second}
        return frozenset(named)


def draw_rules(seed: int) -> WorldRules:
    """The rules of world ``seed`` (the same seed gives the same rules in every process)."""
    rng = random.Random(seed)
    categories = rng.sample(sorted(SYNONYMS), k=rng.randint(5, 8))
    asked = rng.randint(3, min(6, len(categories) - 1))
    questions = {category: rng.randint(1, 3) if i < asked else 0 for i, category in enumerate(categories)}
    all_pairs = list(combinations(categories, 2))
    pairs = [(first, second, rng.randint(1, 2)) for first, second in rng.sample(all_pairs, k=rng.randint(0, 2))]
    paired = {category for first, second, _ in pairs for category in (first, second)}
    free = [category for category in categories if category not in paired]
    rng.shuffle(free)
    cancels = [(free[i], free[i + 1]) for i in range(0, min(2 * rng.randint(0, 2), len(free) - 1), 2)]
    names = {category: rng.choice([[category], [SYNONYMS[category]], [category, SYNONYMS[category]]])
             for category in categories}
    helpful, harmful = rng.uniform(0.15, 0.5), rng.uniform(0.1, 0.4)
    seeded = rng.sample(categories, k=2)
    return WorldRules(
        seed=seed, questions=questions, pairs=pairs, names=names, cancels=cancels,
        capacity=None if rng.random() < 0.5 else rng.randint(3, asked + 1),
        noise=round(rng.uniform(*NOISE_RANGE), 2), helpful=helpful, neutral=1 - helpful - harmful, harmful=harmful,
        uses_feedback=rng.random() < 0.5,
        seed_lines=[f"- {rng.choice([category, SYNONYMS[category]])}" for category in seeded],
    )
