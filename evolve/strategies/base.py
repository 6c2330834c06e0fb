"""How a generation runs and which candidate it keeps: one small base, one implementation per way of running it.

The loop (``loop``) orders generations: it asks the strategy for the parent, lets it prepare the parent's evidence,
plans the candidates, and hands them to the strategy, which starts them (its scheduling, its speculation) and
decides which were accepted and which one is kept. A strategy is chosen once from the config (``make_strategy``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memevo.evolve.candidates import Candidate
from memevo.evolve.config import EvolveConfig
from memevo.evolve.events import Observers
from memevo.evolve.records import GenerationOutcome, GenerationPlan, Instance
from memevo.evolve.scheduling import CandidateRun, Scheduled, Turns
from memevo.evolve.spend import BudgetKeeper
from memevo.evolve.strategies.plays import Plays

if TYPE_CHECKING:
    from memevo.evolve.runtime import Split


def generation_dir(run_dir: Path, generation: int) -> Path:
    """The folder of a generation's records (plan, outcome, race) in the run folder."""
    return run_dir / "generations" / f"gen_{generation:03d}"


@dataclass
class Lineage:
    """What the run knows so far: every candidate by id, the pool of accepted ones and their validation values."""

    candidates: dict[str, Candidate]
    pool: list[Candidate]
    val_instances: dict[str, dict[Instance, float]]

    @property
    def seed(self) -> Candidate:
        """The run's seed: the pool's first member (generation 0 admits it, also when resuming)."""
        return self.pool[0]


@dataclass(frozen=True)
class StrategyContext:
    """Everything a strategy works with, built once by the loop."""

    config: EvolveConfig
    split: Split
    plays: Plays
    lineage: Lineage
    budget: BudgetKeeper
    turns: Turns
    observers: Observers
    run_dir: Path

    def gen_dir(self, generation: int) -> Path:
        return generation_dir(self.run_dir, generation)


@dataclass(frozen=True)
class Ran:
    """What a generation's candidates did: the runs of those that ran, those not started (``budget_stop`` names the
    budget) or not needed, and those accepted."""

    ran: list[tuple[Candidate, CandidateRun]]
    not_started: list[Candidate]
    not_needed: list[Candidate]
    accepted: list[Candidate]
    budget_stop: str | None = None


class GenerationStrategy(ABC):
    """One way of running generations (see the module docstring)."""

    def __init__(self, context: StrategyContext) -> None:
        self.context = context
        self.config = context.config
        self.split = context.split
        self.plays = context.plays
        self.lineage = context.lineage

    @abstractmethod
    def parent(self, history: list[GenerationOutcome], generation: int) -> Candidate:
        """The parent of ``generation``, from the outcomes so far."""

    def seed_users(self) -> tuple[list[str], list[str]]:
        """The train and validation users the seed plays in generation 0: all of them."""
        return self.split.train, self.split.val

    @abstractmethod
    async def prepare_parent(self, generation: int, parent: Candidate) -> None:
        """Play what the parent's evidence needs before the proposers read it."""

    async def run_candidates(self, generation: int, parent: Candidate, plan: GenerationPlan) -> Scheduled | None:
        """The candidates' units of work that every worker process shares, before the generation's outcome is one
        process's (``decide``); None when the strategy runs them in ``decide``."""
        return None

    @abstractmethod
    async def decide(self, generation: int, parent: Candidate, plan: GenerationPlan,
                     scheduled: Scheduled | None) -> Ran:
        """Run what is left of the generation and say which candidates were accepted."""

    @abstractmethod
    def kept(self, parent: Candidate, accepted: list[Candidate], scores: dict[str, dict[Instance, float]]) -> Candidate:
        """The candidate the generation keeps (the next parent, or the pool's best), given validation ``scores``."""

    @abstractmethod
    def best(self, history: list[GenerationOutcome]) -> Candidate:
        """The run's best candidate, scored on the test users at the end."""

    @abstractmethod
    def incumbent(self, parent: Candidate) -> Candidate:
        """The run's best if the last generation, of this parent, keeps none (its test users are speculated)."""

    def remember(self, outcome: GenerationOutcome) -> None:
        """Take note of a generation's outcome (also a stored one, when resuming)."""
