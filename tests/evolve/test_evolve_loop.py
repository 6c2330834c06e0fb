"""The evolution loop on the category double (see tests/doubles/category_backend.py for its rules)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mlflow
import optuna
import pytest
from mlflow import MlflowClient
from optuna.trial import TrialState

from memevo.agents.llm.accounting import RoleUsage
from memevo.core.errors import DamagedFileError, UserInputError
from memevo.environments.amemgym.data.io import save_items
from memevo.evolve.config import EvolveConfig, parse_evolve_config
from memevo.evolve.evaluation import CandidateEval
from memevo.evolve.loop import EvolutionResult, GenerationPlan, run_evolution
from tests.doubles.category_backend import CATEGORIES, CategoryBackend, CategoryHub, category_world

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")

SEED_TYPES = "- commute (how the user gets to work)"
ONE_AT_A_TIME = {"acceptance": "mean", "first_accepted": True}
"""The loop these tests were written for (validation first, one candidate at a time, the mean rule); the race of
``strategy.acceptance: sequential`` has its own tests (tests/evolve/test_evolve_sequential.py)."""


def make_config(tmp_path: Path, **overrides: Any) -> EvolveConfig:
    data_path = tmp_path / "data.json"
    if not data_path.exists():
        save_items(category_world(6, 3), data_path)
    data: dict[str, Any] = {
        "name": "test-evolution",
        "seed": {"policy": {"kind": "awi", "update_every": 2, "short_term": 0, "prompts": {"memory_types": SEED_TYPES}}},
        "components": ["memory_types"],
        "data": {"path": str(data_path)},
        "split": {"train": 2, "val": 2, "test": 2},
        "budget": {"generations": 2, "candidates": 2},
        "episode": {"rounds_init": 1, "rounds_update": 1},
        "tracking": {"enabled": False},
        "optuna": {"n_startup_trials": 1},
    }
    if overrides.get("protocol") != "amemgym_period":  # the in-episode protocol has no candidates to accept
        data["strategy"] = dict(ONE_AT_A_TIME)
    for key, value in overrides.items():
        data[key] = {**data[key], **value} if isinstance(value, dict) and isinstance(data.get(key), dict) else value
    return parse_evolve_config(data)


def evolve(tmp_path: Path, run: str, backend: CategoryBackend | None = None, *, resume: bool = False,
           **overrides: Any) -> tuple[EvolutionResult, CategoryBackend]:
    backend = backend or CategoryBackend(category_world(6, 3))
    config = make_config(tmp_path, **overrides)
    return run_evolution(config, run_dir=tmp_path / run, hub=CategoryHub(backend), resume=resume), backend


def test_complete_feedback_beats_no_evolution(tmp_path: Path) -> None:
    complete, _ = evolve(tmp_path, "complete", feedback={"mode": "complete"})
    none, _ = evolve(tmp_path, "none", feedback={"mode": "none"})
    assert none.best.id == none.seed.id
    assert complete.best.id != complete.seed.id
    assert complete.history[-1].parent_val > none.history[-1].parent_val
    assert complete.best_scores.accuracy > none.best_scores.accuracy
    for category in CATEGORIES:
        assert category in complete.best.policy.prompts["memory_types"]
    assert complete.seed_scores.accuracy == none.seed_scores.accuracy
    assert complete.best_scores.memory_score is not None


def test_question_only_feedback_has_no_choices_truth_or_state(tmp_path: Path) -> None:
    result, backend = evolve(tmp_path, "qonly", feedback={"mode": "question_only"})
    sent = [call["messages"][-1]["content"] for call in backend.calls_for("proposer")]
    assert sent
    for text in sent:
        feedback = text.split("[[ ## feedback ## ]]", 1)[1]
        assert "Which option should I pick" in feedback
        for leak in ("Something for a", "(A)", "Correct answer", "Assistant's answer", "information updates",
                     "is now"):
            assert leak not in feedback
    assert result.best.id == result.seed.id  # question texts name no category: nothing to learn


def test_invalid_proposals_are_rejected_and_counted(tmp_path: Path) -> None:
    world = category_world(6, 3)
    result, _ = evolve(tmp_path, "garbage", CategoryBackend(world, proposer_mode="garbage"))
    assert result.stop_reason == "max generations" and len(result.history) == 3
    assert all(g.stats.rejected == 2 and g.stats.accepted == 0 for g in result.history[1:])
    assert result.best.id == result.seed.id
    bad, _ = evolve(tmp_path, "placeholders", CategoryBackend(world, proposer_mode="drop_placeholders"),
                    components=["write_prompt"], budget={"generations": 1})
    assert "unknown placeholder" in bad.history[1].stats.reasons[0]


def test_pruning_stops_a_dominated_candidate(tmp_path: Path) -> None:
    world = category_world(6, 3)
    result, _ = evolve(tmp_path, "prune", CategoryBackend(world, proposer_mode="forget"),
                       split={"train": 3, "val": 1, "test": 2}, budget={"generations": 1, "candidates": 1},
                       episode={"user_concurrency": 1}, strategy={"order": "train_first", "minibatch": None})
    generation = result.history[1]
    (candidate_id,) = generation.train
    assert generation.pruned == [candidate_id]
    evaluation = CandidateEval.model_validate_json(
        (tmp_path / "prune" / "evals" / candidate_id / "train.json").read_text())
    assert evaluation.pruned and len(evaluation.users) < 3
    assert not (tmp_path / "prune" / "evals" / candidate_id / "val.json").exists()
    assert result.best.id == result.seed.id


class Killed(Exception):
    """Stands for the process being killed."""


class CrashingBackend(CategoryBackend):
    """Raises after a set number of calls: a kill in the middle of a run."""

    def __init__(self, *args: Any, crash_after: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.crash_after = crash_after

    async def chat(self, messages, **kwargs):  # type: ignore[no-untyped-def]
        if len(self.calls) >= self.crash_after:
            raise Killed("killed")
        return await super().chat(messages, **kwargs)


def _comparable(result: EvolutionResult) -> dict[str, Any]:
    """The result without its usage (compared separately with what the processes' backends served)."""
    data = json.loads(result.model_dump_json())
    data.pop("usage")
    return data


def _served(*backends: CategoryBackend) -> RoleUsage:
    """What the backends of all of a run's processes answered (the usage the run must report)."""
    total = RoleUsage()
    for backend in backends:
        total = total.plus(backend.accounting.report().total())
    return total


def test_killed_run_resumes_to_the_same_result(tmp_path: Path) -> None:
    options = {"tracking": {"enabled": True}, "hyperparameters": {"update_every": {"choices": [1, 2]}},
               "budget": {"generations": 2, "candidates": 2}}
    whole, full_backend = evolve(tmp_path, "whole", **options)
    world = category_world(6, 3)
    crash_at = len(full_backend.calls) // 2
    killed_backend = CrashingBackend(world, crash_after=crash_at)
    with pytest.raises(Killed):
        evolve(tmp_path, "killed", killed_backend, **options)
    assert (tmp_path / "killed" / "generations" / "gen_001" / "plan.json").exists()
    resumed, resumed_backend = evolve(tmp_path, "killed", resume=True, **options)
    assert _comparable(resumed) == _comparable(whole)
    # Every call is in the run's usage ledger as it is made, the killed process's unfinished work included:
    # the usage is what the endpoint served over both processes.
    assert resumed.usage.total() == _served(killed_backend, resumed_backend)
    assert whole.usage.total() == _served(full_backend)
    assert len(resumed_backend.calls) < len(full_backend.calls) - crash_at // 2  # finished work was reused
    client = MlflowClient(f"sqlite:///{tmp_path / 'killed' / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("test-evolution").experiment_id])
    names = sorted(run.info.run_name for run in runs)
    for generation in (1, 2):
        assert sum(name.startswith(f"generation-{generation} ") for name in names) == 1
    assert len(names) == len(set(names))
    parent = next(run for run in runs if run.info.run_name == "test-evolution")
    assert len(client.get_metric_history(parent.info.run_id, "objective/running_best_val_score")) == 3
    assert len(client.get_run(parent.info.run_id).inputs.dataset_inputs) == 1
    candidate_runs = {run.info.run_id for run in runs if run.data.tags.get("memevo.role") == "candidate"}
    study = optuna.load_study(study_name="test-evolution", storage=f"sqlite:///{tmp_path / 'killed' / 'optuna.db'}")
    told = [trial for trial in study.trials if trial.state == TrialState.COMPLETE]
    assert told and all(trial.user_attrs.get("mlflow_run_id") in candidate_runs for trial in told)


def test_resume_needs_the_flag_and_the_same_config(tmp_path: Path) -> None:
    evolve(tmp_path, "once", budget={"generations": 0})
    with pytest.raises(UserInputError, match="--resume"):
        evolve(tmp_path, "once", budget={"generations": 0})
    with pytest.raises(UserInputError, match=r"inputs changed since this run started \(config\.budget\.generations\)"):
        evolve(tmp_path, "once", resume=True, budget={"generations": 1})
    # Widths change the speed of a run, not its result: a resume may choose others.
    wider, _ = evolve(tmp_path, "once", resume=True, budget={"generations": 0},
                      episode={"user_concurrency": 1, "candidate_concurrency": 1},
                      llm={"proposer": {"max_concurrency": 3}})
    assert wider.best.id == wider.seed.id


def test_resume_on_changed_data_names_the_user(tmp_path: Path) -> None:
    evolve(tmp_path, "data", budget={"generations": 0})
    items = category_world(6, 3)
    question = items[4].qas[0]
    changed = question.model_copy(update={"answer_choices": [
        choice.model_copy(update={"answer": choice.answer + " (reworded)"}) for choice in question.answer_choices]})
    items[4] = items[4].model_copy(update={"qas": [changed, *items[4].qas[1:]]})
    save_items(items, tmp_path / "data.json")  # same ids, one user's answer texts reworded
    with pytest.raises(UserInputError) as error:
        evolve(tmp_path, "data", resume=True, budget={"generations": 0})
    assert error.value.field == f"data.{items[4].id}" and "inputs changed" in str(error.value)


def test_mlflow_store_holds_runs_metrics_and_artifacts(tmp_path: Path) -> None:
    result, _ = evolve(tmp_path, "tracked", tracking={"enabled": True}, budget={"generations": 1})
    client = MlflowClient(f"sqlite:///{tmp_path / 'tracked' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("test-evolution")
    runs = {run.info.run_name: run for run in client.search_runs([experiment.experiment_id])}
    parent = runs["test-evolution"]
    assert {"data_hash", "git_commit", "agent_model", "proposer_model", "split_seed"} <= set(parent.data.params)
    assert parent.data.metrics["test/best_accuracy"] == pytest.approx(result.best_scores.accuracy)
    assert parent.data.params["objective"] == "accuracy"
    assert parent.data.metrics["test/best_pooled_memory_score"] == pytest.approx(result.best_scores.pooled_memory_score)
    assert parent.data.metrics["test/best_amemgym_memory_score"] == pytest.approx(result.best_scores.memory_score)
    assert not [name for run in runs.values() for name in run.data.metrics if name.rsplit("/", 1)[-1].startswith(
        ("memory_score", "seed_memory_score", "best_memory_score", "val_memory_score", "train_memory_score"))]
    parent_artifacts = {a.path for a in client.list_artifacts(parent.info.run_id)}
    assert {"score_per_generation.png", "config.json", "result.json"} <= parent_artifacts
    assert (tmp_path / "tracked" / "score_per_generation.png").exists()
    best_label = f"g1c0-{result.best.id[:8]}"
    assert result.best.label == best_label
    generation = runs[f"generation-1 (kept {best_label})"]
    assert generation.data.tags["mlflow.parentRunId"] == parent.info.run_id
    assert generation.data.tags["memevo.kept_candidate"] == best_label
    candidate = runs[best_label]
    assert candidate.data.tags["mlflow.parentRunId"] == generation.info.run_id
    # who won: tags, the running best at every generation, initial and final objective
    assert experiment.tags["mlflow.experimentKind"] == "custom_model_development"
    assert "test-evolution" in experiment.tags["mlflow.note.content"]
    kept = client.search_runs([experiment.experiment_id], "tags.`memevo.kept` = 'true'")
    assert sorted(run.info.run_name for run in kept) == sorted([f"g0c0-{result.seed.id[:8]}", best_label])
    (best_run,) = client.search_runs([experiment.experiment_id], "tags.`memevo.best` = 'true'")
    assert best_run.info.run_id == candidate.info.run_id
    assert parent.data.tags["memevo.best_candidate"] == best_label
    running = client.get_metric_history(parent.info.run_id, "objective/running_best_val_score")
    assert [(m.step, m.value) for m in running] == [(o.generation, o.parent_val) for o in result.history]
    assert parent.data.metrics["objective/final_val_score"] == result.history[-1].parent_val
    assert parent.data.metrics["objective/initial_val_score"] == result.history[0].parent_val
    # the data as the parent run's input
    (dataset,) = client.get_run(parent.info.run_id).inputs.dataset_inputs
    assert dataset.dataset.name == "test-evolution-users" and dataset.dataset.digest == parent.data.params["data_hash"]
    metrics = candidate.data.metrics
    for name in ("train_accuracy", "val_accuracy", "train_amemgym_memory_score", "val_amemgym_memory_score",
                 "val_pooled_memory_score", "pruned", "train_accuracy_p00", "val_accuracy_p02",
                 "val_amemgym_memory_score_p02"):
        assert name in metrics, name
    assert "spend/calls_agent" in generation.data.metrics and "spend/calls_proposer" in generation.data.metrics
    for candidate_id in result.history[1].train_skipped:  # validation first: never run on the train users
        (skipped,) = [run for name, run in runs.items() if name.endswith(candidate_id[:8]) and name.startswith("g1")]
        assert skipped.data.metrics["train_users_evaluated"] == 0 and "val_accuracy" in skipped.data.metrics
        assert not any(name.startswith("train_") and name != "train_users_evaluated" for name in skipped.data.metrics)
    history = client.get_metric_history(candidate.info.run_id, "val_accuracy")
    assert [m.step for m in history] == [1]
    artifacts = {a.path for a in client.list_artifacts(candidate.info.run_id)}
    assert {"diff.md", "feedback.txt", "results.csv", "changes.txt", "policy.json", "prompts"} <= artifacts
    diff = Path(client.download_artifacts(candidate.info.run_id, "diff.md", str(tmp_path))).read_text()
    assert "+- instrument" in diff and f"\n {SEED_TYPES}\n" in diff  # against the seed's actual text
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'tracked' / 'mlflow.db'}")
    best = mlflow.genai.load_prompt("prompts:/test-evolution-memory_types@best")
    assert best.template == result.best.policy.prompts["memory_types"] and best.version == 2
    assert best.tags["candidate_id"] == result.best.id and best.tags["mlflow_run_id"] == candidate.info.run_id
    assert best.tags[f"val_{result.objective}"] == f"{result.history[-1].parent_val:.4f}"
    linked = json.loads(client.get_run(candidate.info.run_id).data.tags["mlflow.linkedPrompts"])
    assert {"name": "test-evolution-memory_types", "version": "2"} in linked
    # Optuna: the study's metric is the objective; each trial names its candidate and its MLflow run
    study = optuna.load_study(study_name="test-evolution", storage=f"sqlite:///{tmp_path / 'tracked' / 'optuna.db'}")
    assert study.metric_names == [result.objective]
    # (a trial whose suggestion repeated a known policy is closed, failed, before it has a candidate, and says so)
    repeated = [trial for trial in study.trials if "candidate_id" not in trial.user_attrs]
    assert all(trial.user_attrs["decision"] == "not run: the proposal repeated a known policy" for trial in repeated)
    by_candidate = {trial.user_attrs["candidate_id"]: trial for trial in study.trials if trial not in repeated}
    best_trial = by_candidate[result.best.id]
    assert best_trial.user_attrs["kept"] is True and best_trial.user_attrs["mlflow_run_id"] == candidate.info.run_id
    assert best_trial.user_attrs[f"val_{result.objective}"] == round(result.history[-1].parent_val, 4)
    assert all(trial.state == optuna.trial.TrialState.FAIL for trial in repeated)
    assert best_trial.user_attrs["generation"] == 1 and best_trial.user_attrs["candidate"] == best_label


@pytest.mark.parametrize(("strategy", "shown"), [({"minibatch": None}, "all"), ({"minibatch": 2}, "2"),
                                                  ({"order": "train_first", "minibatch": None}, "none")])
def test_mlflow_minibatch_param_says_what_was_configured(tmp_path: Path, strategy: dict[str, Any], shown: str) -> None:
    evolve(tmp_path, "params", tracking={"enabled": True}, budget={"generations": 0}, strategy=strategy)
    client = MlflowClient(f"sqlite:///{tmp_path / 'params' / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("test-evolution").experiment_id])
    (parent,) = [run for run in runs if run.info.run_name == "test-evolution"]
    assert parent.data.params["minibatch"] == shown


def test_budget_stops_the_run(tmp_path: Path) -> None:
    result, _ = evolve(tmp_path, "budget", budget={"generations": 5, "max_calls": 10})
    assert "call budget" in result.stop_reason and len(result.history) == 1


def test_amemgym_period_protocol_evolves_within_each_user(tmp_path: Path) -> None:
    result, _ = evolve(tmp_path, "period", protocol="amemgym_period", split={"train": 1, "val": 1, "test": 4},
                       tracking={"enabled": True})
    assert result.protocol == "amemgym_period"
    assert result.best_scores.accuracy > result.seed_scores.accuracy
    steps = sorted(p.name for p in (tmp_path / "period" / "in_episode").glob("user-*/period_*.json"))
    assert steps == sorted(["period_00.json", "period_01.json"] * 4)  # never after the last period (I.15)
    client = MlflowClient(f"sqlite:///{tmp_path / 'period' / 'mlflow.db'}")
    (parent,) = client.search_runs([client.get_experiment_by_name("test-evolution").experiment_id])
    history = client.get_metric_history(parent.info.run_id, "evolved_accuracy")
    assert sorted(m.step for m in history) == [0, 1, 2]
    assert parent.data.metrics["test/best_accuracy"] == pytest.approx(result.best_scores.accuracy)


def test_plan_is_saved_before_evaluation(tmp_path: Path) -> None:
    evolve(tmp_path, "plan", budget={"generations": 1})
    plan = GenerationPlan.model_validate_json((tmp_path / "plan" / "generations" / "gen_001" / "plan.json").read_text())
    assert plan.candidates and plan.candidates[0].origin == "proposal"
    assert "Something for a" in plan.feedback  # complete feedback shows the choices


def test_killed_in_episode_run_resumes_with_its_evolved_prompts(tmp_path: Path) -> None:
    options = {"protocol": "amemgym_period", "split": {"train": 1, "val": 1, "test": 2},
               "episode": {"user_concurrency": 1}}
    whole, full_backend = evolve(tmp_path, "whole", **options)
    with pytest.raises(Killed):
        evolve(tmp_path, "killed", CrashingBackend(category_world(6, 3), crash_after=len(full_backend.calls) * 3 // 4),
               **options)
    resumed, _ = evolve(tmp_path, "killed", resume=True, **options)
    assert _comparable(resumed) == _comparable(whole)


SEQUENTIAL = {"episode": {"rounds_init": 1, "rounds_update": 1, "user_concurrency": 1, "candidate_concurrency": 1},
              "hyperparameters": {"update_every": {"choices": [1, 2, 3]}}, "budget": {"generations": 2, "candidates": 2}}


@pytest.mark.parametrize("fraction", [0.2, 0.3, 0.6, 0.9])
def test_killed_sequential_run_reports_what_was_served(tmp_path: Path, fraction: float) -> None:
    """A kill anywhere after the upper-bound table (generation 0 included): the usage counts the killed process's
    calls, those of work it never finished too (the resumed run makes them again: money spent twice). The table is
    saved whole, so a kill inside it saves nothing here (a real run's response cache replays its calls)."""
    whole, full_backend = evolve(tmp_path, "whole", **SEQUENTIAL)
    crash_at = int(len(full_backend.calls) * fraction)
    killed_backend = CrashingBackend(category_world(6, 3), crash_after=crash_at)
    with pytest.raises(Killed):
        evolve(tmp_path, "killed", killed_backend, **SEQUENTIAL)
    resumed, resumed_backend = evolve(tmp_path, "killed", resume=True, **SEQUENTIAL)
    assert _comparable(resumed) == _comparable(whole)
    assert resumed.usage.total() == _served(killed_backend, resumed_backend)
    assert resumed.usage.total().calls >= whole.usage.total().calls
    assert len(resumed_backend.calls) < len(full_backend.calls)


def test_killed_in_episode_run_reports_what_was_served(tmp_path: Path) -> None:
    options = {"protocol": "amemgym_period", "split": {"train": 0, "val": 0, "test": 2},
               "episode": {"user_concurrency": 1}}
    whole, full_backend = evolve(tmp_path, "whole", **options)
    killed_backend = CrashingBackend(category_world(6, 3), crash_after=len(full_backend.calls) // 2)
    with pytest.raises(Killed):
        evolve(tmp_path, "killed", killed_backend, **options)
    resumed, resumed_backend = evolve(tmp_path, "killed", resume=True, **options)
    assert _comparable(resumed) == _comparable(whole)
    assert resumed.usage.total() == _served(killed_backend, resumed_backend)


class WidthBackend(CategoryBackend):
    """TEST DOUBLE: the category backend with a little latency, counting the users (agent calls) in flight."""

    def __init__(self) -> None:
        super().__init__(category_world(6, 3), latency_s=0.002)
        self.in_flight = self.peak_in_flight = 0

    async def chat(self, messages, *, role, **options):  # type: ignore[no-untyped-def]
        if role != "agent":
            return await super().chat(messages, role=role, **options)
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            return await super().chat(messages, role=role, **options)
        finally:
            self.in_flight -= 1


@pytest.mark.parametrize("strategy", [{}, {"first_accepted": False}], ids=["default", "candidates-at-once"])
def test_results_do_not_depend_on_the_width(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            strategy: dict[str, Any]) -> None:
    """By default users, splits and candidates run as wide as the endpoint's limit allows (here MEMEVO_CONCURRENCY,
    the double has no gateway): the seed's train and validation users with the upper bound, a race round's
    candidates together. The result, the Optuna trials and the MLflow rows are those of a sequential run."""
    from tests.evolve.test_evolve_kills import _mlflow_rows, _trials

    monkeypatch.setenv("MEMEVO_CONCURRENCY", "16")
    narrow_backend, wide_backend = WidthBackend(), WidthBackend()
    options: dict[str, Any] = {**SEQUENTIAL, "strategy": strategy, "tracking": {"enabled": True}}
    narrow, _ = evolve(tmp_path, "narrow", narrow_backend, **options)
    wide, _ = evolve(tmp_path, "wide", wide_backend, **{**options, "episode": {"rounds_init": 1, "rounds_update": 1}})
    # sequential: one user's questions at a time (4 here); wide: several users' calls at once (16 seen)
    assert wide_backend.peak_in_flight > narrow_backend.peak_in_flight
    assert _comparable(wide) == _comparable(narrow)
    assert wide.usage.total().calls == narrow.usage.total().calls
    assert _trials(tmp_path / "wide") == _trials(tmp_path / "narrow")
    assert _mlflow_rows(tmp_path / "wide") == _mlflow_rows(tmp_path / "narrow")


def _calls_before_first_candidate(backend: CategoryBackend) -> int:
    """Calls of generation 0 and of generation 1's proposals (a sequential run's first proposer burst)."""
    roles = [call["role"] for call in backend.calls]
    first_proposal = roles.index("proposer")
    return next(i for i in range(first_proposal, len(roles)) if roles[i] != "proposer")


def test_budget_is_checked_before_each_candidate(tmp_path: Path) -> None:
    options = {**SEQUENTIAL, "strategy": {"first_accepted": False}}  # the first candidate's acceptance would end it
    _, full_backend = evolve(tmp_path, "whole", **options)
    budget = {**SEQUENTIAL["budget"], "max_calls": _calls_before_first_candidate(full_backend) + 1}
    result, _ = evolve(tmp_path, "budget", **{**options, "budget": budget})
    assert len(result.history) == 2
    generation = result.history[1]
    assert len(generation.val) == 1 and len(generation.not_started) == 1
    assert generation.not_started[0] not in generation.val
    assert result.stop_reason == "call budget ({}): 1 of 2 candidate(s) of generation 1 not started".format(
        budget["max_calls"])
    assert not (tmp_path / "budget" / "evals" / generation.not_started[0]).exists()
    # Killed inside generation 1's first candidate, the resumed run makes the same decisions.
    started = _calls_before_first_candidate(full_backend)
    killed_backend = CrashingBackend(category_world(6, 3), crash_after=started + 5)
    with pytest.raises(Killed):
        evolve(tmp_path, "killed", killed_backend, **{**options, "budget": budget})
    resumed, resumed_backend = evolve(tmp_path, "killed", resume=True, **{**options, "budget": budget})
    assert _comparable(resumed) == _comparable(result)
    assert resumed.usage.total() == _served(killed_backend, resumed_backend)


def test_split_fraction_rounding_to_zero_fails_before_any_call_or_write(tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match="0 validation users") as caught:
        evolve(tmp_path, "tiny", split={"train": 2, "val": 0.05, "test": 2})
    assert caught.value.field == "split.val"
    assert not (tmp_path / "tiny").exists()


@pytest.mark.parametrize(("bad", "field"), [
    ({"components": ["no_such_component"]}, "components.0"),
    ({"split": {"train": 4, "val": 4, "test": 4}}, "split"),
    ({"hyperparameters": {"top_k": {"choices": [5]}}}, "hyperparameters.top_k"),
])
def test_failed_start_leaves_the_run_folder_free(tmp_path: Path, bad: dict[str, Any], field: str) -> None:
    with pytest.raises(UserInputError) as caught:
        evolve(tmp_path, "run", budget={"generations": 0}, **bad)
    assert caught.value.field == field
    assert not (tmp_path / "run").exists()
    evolve(tmp_path, "run", budget={"generations": 0})  # the fixed config starts without --resume


def test_resume_on_a_new_folder_starts_the_run(tmp_path: Path) -> None:
    first, backend = evolve(tmp_path, "fresh", resume=True, budget={"generations": 0})
    again, again_backend = evolve(tmp_path, "fresh", resume=True, budget={"generations": 0})
    assert _comparable(again) == _comparable(first) and again.usage == first.usage
    assert not again_backend.calls


def test_a_damaged_in_episode_step_ends_the_resume_naming_it(tmp_path: Path) -> None:
    options = {"protocol": "amemgym_period", "split": {"train": 1, "val": 1, "test": 2}}
    evolve(tmp_path, "period", **options)
    step = sorted((tmp_path / "period" / "in_episode").glob("user-*/period_00.json"))[0]
    step.write_text(step.read_text(encoding="utf-8")[:20], encoding="utf-8")
    with pytest.raises(DamagedFileError, match="the prompts evolved after that period are only recorded there") as error:
        evolve(tmp_path, "period", resume=True, **options)
    assert error.value.source == str(step)
