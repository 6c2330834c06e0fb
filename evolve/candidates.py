"""Candidates: a MemoryPolicy plus where it came from, named by the policy's content hash."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from memevo.agents.policy import MemoryPolicy
from memevo.core.lazy_model import LazyModel

Origin = Literal["seed", "proposal", "tuning"]


class Candidate(LazyModel):
    """One point of the search: the policy to evaluate and its lineage.

    ``id`` is the policy id, so two candidates with identical prompts and settings share results.
    """

    model_config = ConfigDict(frozen=True)

    policy: MemoryPolicy
    parent_id: str | None = None
    generation: int = 0
    origin: Origin = "seed"
    index: int = Field(0, description="Position within its generation.")
    changes: list[str] = Field([], description="The proposer's summary of what it changed.")
    trial_number: int | None = Field(None, description="Optuna trial that set its hyperparameters.")
    proposer: str | None = Field(None, description="The proposer that wrote its prompts (None: seed or tuning).")
    other_parent_id: str | None = Field(None, description="The second parent of a merge.")

    @property
    def id(self) -> str:
        return self.policy.policy_id

    @property
    def label(self) -> str:
        return f"g{self.generation}c{self.index}-{self.id[:8]}"
