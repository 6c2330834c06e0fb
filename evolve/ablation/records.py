"""What an ablation stores per (arm, seed): per-user test scores and spend, detached from the engine's types.

Statistics, tables, plots and ``memevo report`` read only these records, so a finished ablation can be
re-rendered without the engine, the data or any LLM.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from memevo.agents.llm.accounting import UsageReport
from memevo.core.atomic_files import write_json_atomic
from memevo.core.lazy_model import LazyModel
from memevo.core.run_files import read_model, read_or_recompute
from memevo.environments.metrics.scores import Scores

ARM_RECORD_FILE = "arm_result.json"


class UnitScore(LazyModel):
    """Test scores of one user under one (arm, seed): the unit every statistic is computed over."""

    arm: str
    seed: int
    user_id: str
    memory: float | None = Field(description="Normalized memory score (mean over periods); None without an upper bound.")
    overall: float = Field(description="Overall QA accuracy (mean over periods).")
    period_memory: list[float | None] = []
    period_overall: list[float] = []


class FailureRates(LazyModel):
    """Write / read / utilization failure shares of all test questions of one run (they sum to 1 - accuracy)."""

    write: float
    read: float
    util: float
    n_questions: int


class ArmSeedRecord(LazyModel):
    """One finished (arm, seed) evolution: its best candidate's per-user test scores, the seed candidate's, spend."""

    arm: str
    seed: int
    units: list[UnitScore]
    seed_units: list[UnitScore] = Field([], description="The un-evolved seed candidate on the same users.")
    failure: FailureRates | None = Field(None, description="None when the run did not diagnose.")
    scores: Scores | None = Field(
        None, description="The best candidate's scores over all its test users: the memory score with the reason it "
        "is n/a, the probe coverage of the diagnosis. None in records written before they were kept.")
    usage: UsageReport = Field(default_factory=UsageReport, description="Calls, tokens and dollars by role.")
    evolution_run_id: str | None = None
    best_policy_id: str | None = None
    config: dict = Field({}, description="The resolved evolve config this run used.")


def arm_seed_dir(run_dir: Path, arm: str, seed: int) -> Path:
    return run_dir / arm / f"seed-{seed}"


def save_arm_record(record: ArmSeedRecord, run_dir: Path) -> Path:
    """Write atomically: the file's presence is what marks the (arm, seed) as finished."""
    path = arm_seed_dir(run_dir, record.arm, record.seed) / ARM_RECORD_FILE
    write_json_atomic(path, record.model_dump(mode="json"))
    return path


def load_arm_record(run_dir: Path, arm: str, seed: int) -> ArmSeedRecord | None:
    """The (arm, seed)'s record; None when it is not finished, or damaged: then it is set aside and its evolution,
    finished in its own folder, resumes to write it again."""
    return read_or_recompute(arm_seed_dir(run_dir, arm, seed) / ARM_RECORD_FILE, ArmSeedRecord)


def find_arm_records(run_dir: Path) -> list[ArmSeedRecord]:
    """Every finished (arm, seed) under an ablation directory, in a stable order."""
    remedy = "resume the ablation to write it again (its evolution resumes from its own folder)"
    records = [read_model(path, ArmSeedRecord, remedy=remedy) for path in sorted(run_dir.glob(f"*/seed-*/{ARM_RECORD_FILE}"))]
    return sorted((record for record in records if record is not None), key=lambda record: (record.arm, record.seed))
