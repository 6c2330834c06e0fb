"""One world at one seed, as the strategy benchmark runs an arm on it: users, seed prompt, noise, LLM double."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memevo.environments.amemgym.data.models import Item
from tests.doubles.category_backend import CategoryBackend


@dataclass(frozen=True)
class WorldRun:
    items: list[Item]
    seed_types: str
    """The seed policy's memory-types section."""
    noise: float
    """Share of agent answers replaced at random while evolving."""
    backend: Callable[[float], CategoryBackend]
    """A fresh LLM double with the given answer noise (0: the noise-free judge of held-out scores)."""
    oracle: Callable[[Sequence[str]], float] | None = None
    """The best reachable noise-free accuracy on the given users, where the world knows it."""
    label: str = ""
    """The world's rules in a few words, for the table of every run."""
