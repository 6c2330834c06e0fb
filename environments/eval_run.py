"""What an evaluation is asked and what it returns, and the run folder it starts in: shared by the evaluation of
replayed benchmarks (``environments.evaluate``) and of live ones (``environments.amemgym.evaluation``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from memevo.agents.llm.accounting import UsageReport
from memevo.agents.policy import MemoryPolicy
from memevo.core.errors import UserInputError
from memevo.core.lazy_model import LazyModel
from memevo.core.setting_names import given, setting
from memevo.environments.metrics import DEFAULT_MIN_PROBE_COVERAGE, Scores, UserScores
from memevo.environments.registry import DEFAULT_ENVIRONMENT
from memevo.environments.rundir import INPUTS_FILE

SimulatorName = Literal["template", "llm"]
DEFAULT_SIMULATOR: SimulatorName = "template"
"""The user simulator when none is asked for, the same for ``memevo eval``, ``memevo evolve`` and the Python API, so
an evolved prompt rescored with ``memevo eval`` meets the users its test scores came from. The template one makes no
calls and repeats itself exactly; AMemGym's protocol uses the LLM one (``--simulator llm``)."""


class EvalRequest(LazyModel):
    """What one evaluation is asked; a field's flag is ``--`` and its name with dashes (``upper_bound``:
    ``--upper-bound``), which errors name."""

    policy: MemoryPolicy
    data: str
    out: Path
    environment: str = DEFAULT_ENVIRONMENT
    options: dict[str, str] = {}
    """The environment's own settings (``Capabilities.options``: ``--dialog-field``)."""
    resume: bool = False
    users: int | None = None
    use_cache: bool = True
    concurrency: int | None = None
    max_concurrent_users: int | None = None
    seed: int = 0
    constrained_answers: bool | None = None
    judge_model: str | None = None
    upper_bound: bool = False
    no_memory_baseline: bool = False
    diagnose: bool = False
    min_probe_coverage: float = DEFAULT_MIN_PROBE_COVERAGE
    simulator: SimulatorName = DEFAULT_SIMULATOR
    simulator_model: str | None = None
    rounds_init: int = 1
    rounds_update: int = 2
    off_policy: Path | None = None
    amemgym_compat: bool = False
    amemgym_source: Path | None = None


class EvalReport(LazyModel):
    """What an evaluation measured, as ``summary.json`` holds it, and the lines the command prints."""

    headline: str
    scores: Scores
    user_scores: list[UserScores]
    usage: UsageReport


def prepare_out(out: Path, resume: bool) -> None:
    """A run starts by recording its inputs (before any LLM call), so a run killed at any point, even
    during the upper bound, can be resumed."""
    started = (out / INPUTS_FILE).exists() or (out / "run").exists()
    if started and not resume:
        raise UserInputError(f"already holds a run; pass {given('resume')} to continue it or choose a new folder",
                             source=str(out))
    if resume and not started:
        raise UserInputError("nothing to resume (no run started here)", source=str(out), field=setting("resume"))
    out.mkdir(parents=True, exist_ok=True)


def usage_summary(usage: UsageReport) -> dict[str, object]:
    return {"by_role": {k: v.model_dump() for k, v in usage.by_role.items()}, "total": usage.total().model_dump()}
