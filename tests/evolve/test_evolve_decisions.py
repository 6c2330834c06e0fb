"""One decision record per candidate (``evolve.decisions``): the terminal, the candidate's MLflow run and its Optuna
trial say what its generation's race decided, a candidate the race found worse is not "not run", and no rejected
candidate is the study's best trial."""

from __future__ import annotations

import logging
from pathlib import Path

import optuna
import pytest
from mlflow import MlflowClient
from optuna.trial import TrialState

from memevo.environments.amemgym.data.io import save_items
from memevo.evolve.decisions import DECISIONS_FILE, RACE_LOSS, GenerationDecisions, race_verdicts
from tests.doubles.category_backend import CategoryBackend, category_world
from tests.evolve.test_evolve_loop import evolve

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")

WORLD = category_world(8, 3)


def test_terminal_mlflow_and_optuna_say_what_the_race_decided(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    save_items(WORLD, tmp_path / "data.json")
    caplog.set_level(logging.INFO, logger="memevo.evolve")
    result, _ = evolve(tmp_path, "race", CategoryBackend(WORLD, proposer_mode="step", answer_noise=0.2),
                       strategy={"acceptance": "sequential", "first_accepted": False},
                       split={"train": 3, "val": 3, "test": 2}, budget={"generations": 2, "candidates": 3},
                       episode={"rounds_init": 1, "rounds_update": 1, "user_concurrency": 1},
                       tracking={"enabled": True})
    run_dir = tmp_path / "race"
    study = optuna.load_study(study_name="test-evolution", storage=f"sqlite:///{run_dir / 'optuna.db'}")
    trials = {t.user_attrs["candidate_id"]: t for t in study.trials if "candidate_id" in t.user_attrs}
    client = MlflowClient(f"sqlite:///{run_dir / 'mlflow.db'}")
    runs = {run.data.tags.get("memevo.candidate_id"): run
            for run in client.search_runs([client.get_experiment_by_name("test-evolution").experiment_id])}
    passed = {result.seed.id} | {cid for outcome in result.history for cid in outcome.accepted_ids}
    rejected_in_race = 0
    for outcome in result.history[1:]:
        gen_dir = run_dir / "generations" / f"gen_{outcome.generation:03d}"
        decisions = GenerationDecisions.model_validate_json((gen_dir / DECISIONS_FILE).read_text())
        verdicts = race_verdicts(gen_dir)
        for decision in decisions.decisions:
            cid = decision.candidate_id
            assert runs[cid].data.tags["memevo.decision"] == decision.text
            assert trials[cid].user_attrs["decision"] == decision.text
            assert f"gen {outcome.generation} {decision.label}: {decision.text}" in caplog.messages
            if cid in verdicts and cid not in passed:
                rejected_in_race += 1
                assert decision.text == (f"rejected in the race: {RACE_LOSS[verdicts[cid].state]} "
                                         f"({verdicts[cid].reason})")
                assert trials[cid].state == TrialState.PRUNED  # it ran and lost: never the best trial
            if decision.state == "not_run":
                assert trials[cid].state == TrialState.FAIL  # nothing measured: not shown as pruned
    assert rejected_in_race, "no candidate lost a race"
    assert study.best_trial.user_attrs["candidate_id"] in passed
    (parent,) = client.search_runs([client.get_experiment_by_name("test-evolution").experiment_id],
                                   "attributes.run_name = 'test-evolution'")
    note, metrics = parent.data.tags["mlflow.note.content"], parent.data.metrics
    assert f"{result.seed.label} -> {result.best.label}" in note and "paired t p" in note and "Cost: " in note
    assert metrics["test/best_accuracy"] == pytest.approx(result.best_scores.accuracy)
    assert metrics["test/best_minus_seed_low"] <= metrics["test/best_minus_seed"] <= metrics["test/best_minus_seed_high"]
    # each memory score says which it is: the terminal's (pooled), AMemGym's mean of cell ratios
    assert metrics["test/best_pooled_memory_score"] == pytest.approx(result.best_scores.pooled_memory_score)
    assert metrics["test/best_amemgym_memory_score"] == pytest.approx(result.best_scores.memory_score)
