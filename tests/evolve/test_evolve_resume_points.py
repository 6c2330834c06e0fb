"""Resume points of the evolution loop that no LLM request marks: a failed proposer call, and a stop between
Optuna's ask and the plan write. Both must resume to the result of an uninterrupted run.

The loop runs in this process on the category double (tests/doubles/category_backend.py); an exception
raised at the chosen instruction stands for the process dying there (nothing in the loop catches it, and
everything durable is in the run folder). The subprocess kill harness is tests/evolve/test_evolve_kills.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import optuna
import pytest

from memevo.agents.llm.protocol import LLMError
from memevo.evolve.tuner import Tuner
from tests.doubles.category_backend import CategoryBackend, category_world
from tests.evolve.test_evolve_loop import _comparable, evolve

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")

TUNED = {"hyperparameters": {"update_every": {"choices": [1, 2, 3]}, "short_term": {"low": 0, "high": 4}},
         "budget": {"generations": 2, "candidates": 3},
         "episode": {"rounds_init": 1, "rounds_update": 1, "user_concurrency": 1, "candidate_concurrency": 1}}


class FailingProposerBackend(CategoryBackend):
    """The proposer's endpoint fails after its retries (``LLMError``) from its ``fail_from``-th call on."""

    def __init__(self, *args: Any, fail_from: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fail_from = fail_from
        self.proposer_calls = 0

    async def chat(self, messages, *, role, **kwargs):  # type: ignore[no-untyped-def]
        if role == "proposer":
            self.proposer_calls += 1
            if self.proposer_calls >= self.fail_from:
                raise LLMError("endpoint failed after 5 retries: HTTP 503")
        return await super().chat(messages, role=role, **kwargs)


def _trials(run_dir: Path) -> list[tuple[int, str, dict[str, Any], float | None]]:
    study = optuna.load_study(study_name="test-evolution", storage=f"sqlite:///{run_dir / 'optuna.db'}")
    return [(t.number, t.state.name, t.params, t.value) for t in study.trials]


@pytest.mark.parametrize("fail_from", [1, 2])
def test_a_failed_proposer_call_ends_the_run_and_resume_asks_again(tmp_path: Path, fail_from: int) -> None:
    whole, _ = evolve(tmp_path, "whole", **TUNED)
    backend = FailingProposerBackend(category_world(6, 3), fail_from=fail_from)
    with pytest.raises(LLMError, match="after 5 retries"):
        evolve(tmp_path, "failed", backend, **TUNED)
    assert not (tmp_path / "failed" / "generations" / "gen_001" / "plan.json").exists()
    resumed, _ = evolve(tmp_path, "failed", resume=True, **TUNED)
    assert _comparable(resumed) == _comparable(whole)
    assert not any("503" in reason for outcome in resumed.history for reason in outcome.stats.reasons)
    assert _trials(tmp_path / "failed") == _trials(tmp_path / "whole")


class Stopped(Exception):
    """Stands for the process dying at the chosen instruction."""


@pytest.mark.parametrize("where", ["after the 1st ask", "after the 2nd ask", "inside the 3rd ask",
                                   "after the 3rd ask"])
def test_a_stop_between_ask_and_plan_resumes_to_the_same_trials(tmp_path: Path, where: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    whole, _ = evolve(tmp_path, "whole", **TUNED)
    asks = {"n": 0}
    ordinal = int(where.split()[2][0])
    ask, suggest = Tuner.ask, optuna.Trial.suggest_int

    def counted_ask(self: Tuner) -> tuple[int, dict[str, int]]:
        asks["n"] += 1
        result = ask(self)
        if asks["n"] == ordinal + 1 and where.startswith("after"):  # the seed's trial is ask 1
            raise Stopped(where)
        return result

    def interrupted_suggest(self: optuna.Trial, name: str, *args: Any, **kwargs: Any) -> int:
        if asks["n"] == ordinal + 1 and where.startswith("inside"):  # its first parameter is stored, not the 2nd
            raise Stopped(where)
        return suggest(self, name, *args, **kwargs)

    monkeypatch.setattr(Tuner, "ask", counted_ask)
    monkeypatch.setattr(optuna.Trial, "suggest_int", interrupted_suggest)
    with pytest.raises(Stopped):
        evolve(tmp_path, "stopped", **TUNED)
    monkeypatch.undo()
    assert not (tmp_path / "stopped" / "generations" / "gen_001" / "plan.json").exists()
    resumed, _ = evolve(tmp_path, "stopped", resume=True, **TUNED)
    assert _comparable(resumed) == _comparable(whole)
    trials = _trials(tmp_path / "stopped")
    assert trials == _trials(tmp_path / "whole")
    study = optuna.load_study(study_name="test-evolution", storage=f"sqlite:///{tmp_path / 'stopped' / 'optuna.db'}")
    failed = [trial for trial in study.trials if trial.state.name == "FAIL"]
    assert all(trial.user_attrs.get("decision") for trial in failed)  # only never-run candidates, none left by the stop
