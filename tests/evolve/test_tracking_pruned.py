"""A pruned candidate's MLflow run says what its run folder says: its figures rest on the train users its saved
evaluation covers, not on whichever other users' episodes happened to finish before the pruner's decision was
logged (issue 41: ``train_accuracy`` 0.3125 / 0.375 / 0.125 in three runs of one config)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from mlflow import MlflowClient

from memevo.evolve.evaluation import CandidateEval
from tests.doubles.category_backend import CategoryBackend, category_world
from tests.evolve.test_evolve_loop import evolve

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")


def test_a_pruned_candidates_metrics_are_those_of_its_saved_evaluation(tmp_path: Path) -> None:
    # every train user plays at once: the others finish while the pruner decides on the first
    result, _ = evolve(tmp_path, "prune", CategoryBackend(category_world(6, 3), proposer_mode="forget"),
                       split={"train": 4, "val": 1, "test": 1}, budget={"generations": 1, "candidates": 1},
                       episode={"user_concurrency": 4}, strategy={"order": "train_first", "minibatch": None},
                       tracking={"enabled": True})
    (candidate_id,) = result.history[1].pruned
    run_dir = tmp_path / "prune"
    saved = CandidateEval.model_validate_json((run_dir / "evals" / candidate_id / "train.json").read_text())
    covered = [user.user_id for user in saved.users]
    assert saved.pruned and len(covered) < 4
    finished = [path.parent.name for path in (run_dir / "evals" / candidate_id / "train" / "users").glob("*/meta.json")]
    assert set(finished) > set(covered), "no other user's episode began: the test shows nothing"

    client = MlflowClient(f"sqlite:///{run_dir / 'mlflow.db'}")
    (run,) = [run for run in client.search_runs([client.get_experiment_by_name("test-evolution").experiment_id])
              if run.data.params.get("candidate_id") == candidate_id]
    answers = Path(client.download_artifacts(run.info.run_id, "results.csv", str(tmp_path))).read_text()
    rows = [row for row in csv.DictReader(io.StringIO(answers)) if row["split"] == "train"]
    assert list(dict.fromkeys(row["user_id"] for row in rows)) == covered
    metrics = run.data.metrics
    assert metrics["train_users_evaluated"] == len(covered)
    assert metrics["train_objective"] == pytest.approx(saved.score) == pytest.approx(result.history[1].train[candidate_id])
    assert metrics["train_accuracy"] == pytest.approx(sum(int(row["correct"]) for row in rows) / len(rows))
