"""Evolution on any environment: a split drawn from a replayed benchmark's items, and a cross-benchmark test
(evolve on AMemGym users, report held-out scores on another environment's items)."""

from __future__ import annotations

import csv
import io
import json
import logging
import re
from pathlib import Path
from typing import Any

import optuna
import pytest
from mlflow import MlflowClient

from memevo.core.errors import UserInputError
from memevo.environments.amemgym.data.io import save_items
from memevo.environments.amemgym.data.models import Item
from memevo.environments.registry import ENVIRONMENTS
from memevo.environments.replay import ReplayItem, ReplayQuestion, ReplaySession
from memevo.evolve.config import parse_evolve_config
from memevo.evolve.cross_test import read_cross_test
from memevo.evolve.loop import run_evolution
from memevo.evolve.presentation.report import report_run
from tests.doubles.category_backend import CategoryBackend, CategoryHub, category_world
from tests.doubles.registries import register_for_test

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")

SEED_TYPES = "- commute (how the user gets to work)"


def replayed(items: list[Item]) -> list[ReplayItem]:
    """The category world as a replayed benchmark: each user's announcements as recorded sessions, then the
    questions about the final state as multiple choice (categorised by the variable they ask about)."""
    out = []
    for item in items:
        sessions = [
            ReplaySession(id=f"p{p}s{s}", time=f"{session.session_time}", messages=[
                {"role": "user", "content": session.query}, {"role": "assistant", "content": "Noted."}])
            for p, period in enumerate(item.periods) for s, session in enumerate(period.sessions)
        ]
        final = item.periods[-1].state
        questions = [
            ReplayQuestion(query=q.query, choices=[c.answer for c in q.answer_choices], scoring="choice",
                           gold=q.answer_choices[q.gold_index(final)].answer, category=q.required_info[0])
            for q in item.qas
        ]
        out.append(ReplayItem(id=f"conv-{item.id}", sessions=sessions, questions=questions))
    return out


@pytest.fixture
def tiny_benchmark(monkeypatch: pytest.MonkeyPatch) -> str:
    """'locomo' read by the test double's reader (the real reader is another module's)."""
    register_for_test(monkeypatch, ENVIRONMENTS, "locomo", "tests.doubles.replay_environment:TinyReplayEnvironment")
    return "locomo"


def write_replay(path: Path, items: list[ReplayItem]) -> Path:
    path.write_text(json.dumps([item.model_dump(mode="json") for item in items]), encoding="utf-8")
    return path


def config(tmp_path: Path, **overrides: Any) -> Any:
    data_path = tmp_path / "data.json"
    if not data_path.exists():
        save_items(category_world(6, 2), data_path)
    data: dict[str, Any] = {
        "name": "env-evolution",
        "seed": {"policy": {"kind": "awi", "update_every": 1, "short_term": 0, "prompts": {"memory_types": SEED_TYPES}}},
        "components": ["memory_types"],
        "data": {"path": str(data_path)},
        "split": {"train": 2, "val": 2, "test": 2},
        "budget": {"generations": 1, "candidates": 1},
        "episode": {"rounds_init": 1, "rounds_update": 1},
        "strategy": {"acceptance": "mean", "first_accepted": True},
        "feedback": {"mode": "complete"},
        "tracking": {"enabled": False},
        "optuna": {"n_startup_trials": 1},
        **overrides,
    }
    return parse_evolve_config(data)


def test_evolve_on_amemgym_then_test_on_another_environment(tmp_path: Path, tiny_benchmark: str) -> None:
    other = write_replay(tmp_path / "other.json", replayed(category_world(3, 2, seed=7)))
    settings = config(tmp_path, test_environment={"environment": tiny_benchmark, "data": {"path": str(other)}})
    backend = CategoryBackend(category_world(6, 2))
    result = run_evolution(settings, run_dir=tmp_path / "run", hub=CategoryHub(backend), resume=False)
    assert result.best.id != result.seed.id
    cross = read_cross_test(tmp_path / "run")
    assert cross is not None and cross.environment == "locomo" and cross.seed_scores.n_users == 3
    assert cross.best_scores.accuracy > cross.seed_scores.accuracy
    assert cross.seed_scores.random_baseline == pytest.approx(1 / 3)  # multiple choice of three
    assert {c.category for c in cross.best_scores.per_category} == {"commute", "instrument", "beverage", "genre"}
    assert (tmp_path / "run" / "evals" / result.best.id / "cross-locomo").is_dir()
    report = report_run(tmp_path / "run")
    assert "environment amemgym" in report and "Cross-benchmark test on locomo" in report
    again = run_evolution(settings, run_dir=tmp_path / "run", hub=CategoryHub(backend), resume=True)
    assert again.best.id == result.best.id and read_cross_test(tmp_path / "run") == cross


def test_evolve_on_a_split_of_a_replayed_benchmark(tmp_path: Path, tiny_benchmark: str) -> None:
    data = write_replay(tmp_path / "bench.json", replayed(category_world(6, 2)))
    settings = config(tmp_path, environment=tiny_benchmark, data={"path": str(data)})
    backend = CategoryBackend(category_world(6, 2))
    result = run_evolution(settings, run_dir=tmp_path / "run", hub=CategoryHub(backend), resume=False)
    split = json.loads((tmp_path / "run" / "split.json").read_text())
    assert sorted(split["train"] + split["val"] + split["test"]) == sorted(f"conv-user-{n}" for n in range(6))
    assert result.best.id != result.seed.id and result.best_scores.accuracy > result.seed_scores.accuracy
    assert result.seed_scores.upper_bound is None and result.seed_scores.per_category
    assert result.environment == "locomo"
    assert json.loads((tmp_path / "run" / "result.json").read_text())["environment"] == "locomo"
    proposer_feedback = [call["messages"][-1]["content"] for call in backend.calls_for("proposer")]
    assert proposer_feedback and all("Which option should I pick" in text for text in proposer_feedback)
    assert "environment locomo" in report_run(tmp_path / "run")


def test_a_free_text_environment_logs_scores_under_score_names_in_every_split(
        tmp_path: Path, tiny_benchmark: str, caplog: pytest.LogCaptureFixture) -> None:
    """One user's data holds a free-text question: the run's figure is a mean credit, so every split (also those
    whose users met only multiple choice), the test and the log lines name it ``score``, never ``accuracy``, and
    every metric name, Optuna's and the ``objective`` param say its credit (``score_exact_match``); each candidate's
    answers carry their score and category, and each category has its metric."""
    items = replayed(category_world(6, 2))
    first = items[0].questions[0]
    free = first.model_copy(update={"choices": None, "scoring": "exact_match"})
    items[0] = items[0].model_copy(update={"questions": [*items[0].questions, free]})
    data = write_replay(tmp_path / "bench.json", items)
    settings = config(tmp_path, environment=tiny_benchmark, data={"path": str(data)}, tracking={"enabled": True})
    with caplog.at_level(logging.INFO, logger="memevo.evolve"):
        result = run_evolution(settings, run_dir=tmp_path / "run",
                               hub=CategoryHub(CategoryBackend(category_world(6, 2))), resume=False)
    user_lines = [record.getMessage() for record in caplog.records if " user conv-" in record.getMessage()]
    assert user_lines and all(re.search(r": score \d\.\d{3}$", line) for line in user_lines)
    assert not [record for record in caplog.records if "accuracy" in record.getMessage()]
    assert any(record.getMessage().startswith("test per category (score, seed -> best): ") for record in caplog.records)
    client = MlflowClient(f"sqlite:///{tmp_path / 'run' / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("env-evolution").experiment_id])
    names = {name for run in runs for name in run.data.metrics}
    assert {"train_score_exact_match", "val_score_exact_match", "train_score_exact_match_p00",
            "val_score_exact_match_p00", "test/seed_score_exact_match", "test/best_score_exact_match"} <= names
    assert not [name for name in names if "accuracy" in name]
    categories = {c.category: c.accuracy for c in result.best_scores.per_category}
    assert {f"val_score_exact_match/category/{name}" for name in categories} <= names
    (parent,) = [run for run in runs if run.info.run_name == "env-evolution"]
    assert parent.data.params["objective"] == "score_exact_match"
    assert parent.data.metrics["test/best_score_exact_match"] == pytest.approx(result.best_scores.accuracy)
    assert {name: parent.data.metrics[f"test/best_score_exact_match/category/{name}"] for name in categories} == \
        pytest.approx(categories)
    seed_run = next(run for run in runs if run.data.params.get("candidate_id") == result.seed.id)
    answers = list(csv.DictReader(io.StringIO(Path(client.download_artifacts(
        seed_run.info.run_id, "results.csv", str(tmp_path))).read_text(encoding="utf-8"))))
    assert {row["category"] for row in answers} == set(categories)
    assert all(float(row["score"]) == float(row["correct"]) for row in answers)  # exact match: all or nothing
    study = optuna.load_study(study_name="env-evolution", storage=f"sqlite:///{tmp_path / 'run' / 'optuna.db'}")
    attributes = {name for trial in study.trials for name in trial.user_attrs}
    assert "val_score_exact_match" in attributes and "val_accuracy" not in attributes
    assert study.metric_names == ["score_exact_match"], "the study names its objective as the runs do"


@pytest.mark.parametrize(("overrides", "field"), [
    ({"protocol": "amemgym_period"}, "protocol"),
    ({"objective": "amemgym_memory_score"}, "objective"),
    ({"data": {"synth": {"n_users": 3}}}, "data.synth"),
])
def test_amemgym_only_settings_on_another_environment_name_their_field(tmp_path: Path, overrides: dict[str, Any],
                                                                       field: str) -> None:
    with pytest.raises(UserInputError) as caught:
        config(tmp_path, environment="longmemeval", **overrides)
    assert caught.value.field == field


def test_an_environment_missing_from_this_build_is_a_user_error(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    register_for_test(monkeypatch, ENVIRONMENTS, "memoryagentbench", "memevo.environments.not_there:Missing")
    settings = config(tmp_path, environment="memoryagentbench", data={"path": str(tmp_path / "x.json")})
    with pytest.raises(UserInputError, match="not available in this installation"):
        run_evolution(settings, run_dir=tmp_path / "run", hub=CategoryHub(CategoryBackend([])), resume=False)
    assert not (tmp_path / "run").exists()
