"""The loop's records: what a generation plans, what it decides, what a run returns.

Plain pydantic models without behaviour beyond counting, saved in the run folder as they are made so a
resumed run reads its decisions back instead of making them again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, Field

from memevo.agents.llm.accounting import UsageReport
from memevo.core.atomic_files import write_json_atomic
from memevo.core.errors import DamagedFileError
from memevo.core.lazy_model import LazyModel
from memevo.core.run_files import RESTORE, delete_and_resume, read_model, read_or_recompute
from memevo.environments.metrics import Scores, UserScores
from memevo.environments.registry import DEFAULT_ENVIRONMENT, EnvironmentName
from memevo.evolve.candidates import Candidate
from memevo.evolve.config import Objective, stored_objective
from memevo.evolve.validation import Verdict

Record = TypeVar("Record", bound=BaseModel)


class Instance(tuple[str, int]):
    """A (user id, period) cell, compared and hashed as that pair. ``weight`` is the cell's weight in the means
    selection takes: its question count when the objective is a score over questions, so a mean over cells pools the
    questions as the displayed score and the benchmarks' own scorers do; 1 for AMemGym's memory score, a mean of cell
    ratios. The weight is a property of the data (every candidate is asked the same questions), so it travels with
    the key through any merge of instance maps; a plain pair weighs 1."""

    weight: int

    def __new__(cls, user_id: str, period: int, weight: int = 1) -> Instance:
        cell = super().__new__(cls, (user_id, period))
        cell.weight = weight
        return cell

    def __getnewargs__(self) -> tuple[str, int, int]:  # type: ignore[override]  # copies keep the weight
        return self[0], self[1], self.weight


def cell_weight(key: tuple[str, int]) -> int:
    """A cell's weight in a mean (see ``Instance``)."""
    return key.weight if isinstance(key, Instance) else 1


class ProposalStats(LazyModel):
    """How a generation's proposals fared in validation."""

    total: int = 0
    accepted: int = 0
    repaired: int = 0
    rejected: int = 0
    duplicates: int = 0
    """Valid proposals dropped for repeating a known policy (each asked for again while retries last)."""
    reasons: list[str] = []

    def count(self, verdict: Verdict) -> None:
        self.total += 1
        self.repaired += bool(verdict.repairs) and verdict.accepted
        if verdict.accepted:
            self.accepted += 1
        else:
            self.rejected += 1
            self.reasons.append(verdict.reason or "rejected")

    def add(self, other: ProposalStats) -> None:
        self.total += other.total
        self.accepted += other.accepted
        self.repaired += other.repaired
        self.rejected += other.rejected
        self.duplicates += other.duplicates
        self.reasons += other.reasons


class GenerationPlan(LazyModel):
    """What a generation will evaluate, fixed before any evaluation so a resume reuses it."""

    generation: int
    parent_id: str
    feedback: str = Field(description="The evidence as rendered for the proposers.")
    candidates: list[Candidate]
    stats: ProposalStats


class GenerationOutcome(LazyModel):
    generation: int
    parent_id: str
    kept_id: str = Field(description="The best accepted candidate so far (on validation).")
    accepted: bool = Field(description="Whether this generation added at least one candidate to the pool.")
    accepted_ids: list[str] = Field([], description="Candidates this generation accepted.")
    train: dict[str, float]
    val: dict[str, float]
    pruned: list[str]
    gated: list[str] = Field([], description="Stopped by the minibatch gate.")
    train_skipped: list[str] = Field(
        [], description="Validation first: not run on all train users (rejected on validation, "
        "or checked on a minibatch of them), so ``train`` has no score for them: it was not measured.")
    parent_val: float = Field(description="Validation score of ``kept_id``.")
    stats: ProposalStats
    not_started: list[str] = Field([], description="Candidates left out: the budget was spent.")
    not_needed: list[str] = Field(
        [], description="``strategy.first_accepted``: candidates not run, an earlier one of the "
        "generation was accepted.")
    stop_reason: str | None = Field(None, description="Set when the budget ran out during this generation.")


class EvolutionResult(LazyModel):
    """The outcome of a run: seed and best candidates with their test scores, history and spend."""

    protocol: Literal["outer_loop", "amemgym_period"]
    environment: EnvironmentName = Field(DEFAULT_ENVIRONMENT, description="The environment the run evolved and "
                                         "tested on (results written before it was recorded were all AMemGym's).")
    objective: Annotated[Objective, BeforeValidator(stored_objective)] = "accuracy"
    seed: Candidate
    best: Candidate
    seed_scores: Scores
    best_scores: Scores
    seed_user_scores: list[UserScores]
    best_user_scores: list[UserScores]
    history: list[GenerationOutcome] = []
    stop_reason: str
    usage: UsageReport


RECOMPUTED: tuple[type[BaseModel], ...] = (GenerationOutcome, EvolutionResult)
"""Records a resume computes again, the same, from what is stored before them (evaluations, race records), as it
does after a kill just before one was written: a damaged one is set aside and computed again."""
REMEDIES: dict[type[BaseModel], str] = {
    GenerationPlan: delete_and_resume("it", "its generation's candidates are proposed again, the same ones while the "
                                      "response cache holds the proposals"),
}
"""What to do about a damaged record that is not recomputed (``run_files``)."""
SUMMARY_REMEDY = delete_and_resume("it", "its candidate is evaluated again; once its generation has an outcome.json "
                                   "nothing evaluates it again, so restore it then")
"""A candidate's summary (``evals/<candidate>/<label>.json``): a resume recomputes it only while its generation runs."""


def rewritten_by_resume(run_dir: Path) -> str:
    """What to do about a damaged record that a resume writes again (the config, an outcome, the result), for readers
    outside a run such as ``memevo report``."""
    return f"resume the run to write it again: memevo evolve CONFIG --run-dir {run_dir} --resume"


def read_written(path: Path, model: type[Record], run_dir: Path) -> Record:
    """A record of ``run_dir`` read outside its run (``memevo report``): a damaged or vanished one ends the command
    naming it and the resume that writes it again."""
    record = read_model(path, model, remedy=rewritten_by_resume(run_dir))
    if record is None:
        raise DamagedFileError("missing", source=str(path), remedy=rewritten_by_resume(run_dir))
    return record


def read_record(path: Path, model: type[Record]) -> Record | None:
    """The record saved at ``path``, or None when it was never written (or is damaged and ``RECOMPUTED``); any other
    damaged record ends the run naming it and the remedy."""
    if model in RECOMPUTED:
        return read_or_recompute(path, model)
    return read_model(path, model, remedy=REMEDIES.get(model, RESTORE))


def write_record(path: Path, record: BaseModel) -> None:
    write_json_atomic(path, json.loads(record.model_dump_json()))
