"""What the MLflow and Optuna pages tell a person: decisions and their reasons, real run times, spend apart from
the scores (``unpriced``, never 0), a run folder that still shows its artifacts when moved, and damaged tracking
files that end in one line or are rebuilt (``evolve/tracking``, ``evolve/tuner.py``)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import optuna
import pytest
from mlflow import MlflowClient
from optuna.trial import TrialState

from memevo.agents.llm.accounting import RoleUsage, UsageReport
from memevo.agents.policy import MemoryPolicy
from memevo.core.errors import UserInputError
from memevo.evolve.candidates import Candidate
from memevo.evolve.config import IntRange, OptunaConfig
from memevo.evolve.decisions import candidate_decision
from memevo.evolve.evaluation import CandidateEval
from memevo.evolve.records import GenerationOutcome, ProposalStats
from memevo.evolve.tracking.payloads import COST_PREFIX, cost_metrics
from memevo.evolve.tracking.store import MLFLOW_IDS_FILE, Tracker
from memevo.evolve.tracking.stores import check_artifact_location, open_tracking_store
from memevo.evolve.tuner import DECISION_ATTR, Tuner

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning", "ignore::UserWarning")


def _eval(split: str, score: float, *, users: int = 2, total: int = 2, pruned: bool = False) -> CandidateEval:
    """A finished evaluation whose objective is ``score`` (each user answered that share of one question)."""
    from memevo.evolve.evaluation import UserOutcome

    outcome = UserOutcome(user_id="u", accuracy=score, period_accuracy=[score])
    return CandidateEval(candidate_id="c", split=split, users=[outcome] * users, n_users_total=total, pruned=pruned)


def _outcome(kept_id: str, **lists: list[str]) -> GenerationOutcome:
    return GenerationOutcome(generation=1, parent_id="p", kept_id=kept_id, accepted=bool(lists.get("accepted_ids")),
                             train={}, val={}, pruned=[], parent_val=0.45, stats=ProposalStats(), **lists)


def test_each_candidate_says_what_its_generation_did_with_it_and_why() -> None:
    seed = Candidate(policy=MemoryPolicy(kind="awi"), origin="seed")
    child = Candidate(policy=MemoryPolicy(kind="awi", top_k=3), parent_id=seed.id, generation=1, origin="tuning")

    def decide(outcome: GenerationOutcome | None = None, **evals: CandidateEval) -> str:
        return candidate_decision(child, dict(evals), outcome=outcome or _outcome(seed.id), parent_val=0.45)

    assert candidate_decision(seed, {"val": _eval("val", 0.45)}, outcome=_outcome(seed.id), parent_val=None) == \
        "kept: the seed (validation 0.450)"
    assert candidate_decision(child, {"val": _eval("val", 0.5)}, outcome=_outcome(child.id), parent_val=0.45) == \
        "kept: validation 0.500 vs parent 0.450"
    assert decide(val=_eval("val", 0.41)) == "rejected: validation 0.410 vs parent 0.450"
    assert decide(val=_eval("val", 0.5)) == \
        "not accepted: validation 0.500 vs parent 0.450 (not enough for the acceptance rule)"
    assert decide(_outcome("other", accepted_ids=["other", child.id]), val=_eval("val", 0.5)) == \
        "accepted, not kept: validation 0.500 vs parent 0.450 (a better candidate was kept)"
    assert decide(train=_eval("train", 0.2, users=1, total=4, pruned=True)) == \
        "pruned: stopped by the pruner after 1 of 4 train users (train 0.200)"
    assert decide(minibatch=_eval("minibatch", 0.3)).startswith("rejected at the minibatch gate: 0.300 on 2")
    assert decide(_outcome("other", accepted_ids=["other"], not_needed=[child.id])) == \
        "not run: generation ended (an earlier candidate was accepted)"
    assert decide(_outcome(seed.id, not_started=[child.id])) == "not run: generation ended (budget spent)"


def test_spend_is_a_section_of_its_own_and_an_unpriced_model_has_no_dollar_figure() -> None:
    usage = UsageReport(by_role={"agent": RoleUsage(calls=10, prompt_tokens=50, completion_tokens=5, unpriced_calls=10),
                                 "proposer": RoleUsage(calls=2, dollars=0.01)})
    metrics = cost_metrics(usage)
    assert all(name.startswith(COST_PREFIX) for name in metrics)
    assert f"{COST_PREFIX}dollars_agent" not in metrics and metrics[f"{COST_PREFIX}unpriced_calls_agent"] == 10
    assert metrics[f"{COST_PREFIX}dollars_proposer"] == 0.01 and metrics[f"{COST_PREFIX}tokens_agent"] == 55


def _entry(label: str, span: tuple[int, int] | None = None) -> dict[str, object]:
    return {"label": label, "metrics": {"val_objective": 0.5}, "params": {"top_k": 3}, "artifacts": {"a.txt": "x"},
            "tags": {"memevo.decision": "kept"}, "span": span}


def _tracked(run_dir: Path, generations: int = 1) -> Tracker:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.json").write_text("{}")
    tracker = Tracker(run_dir=run_dir, uri=None, experiment="pages")
    tracker.start("pages", {"name": "pages", "objective": "accuracy"}, {})
    for generation in range(generations):
        tracker.log_generation(generation, {"objective/running_best_val_score": 0.5}, [_entry(f"g{generation}c0")])
    return tracker


def test_a_candidate_run_lasts_as_long_as_its_evaluation_not_its_logging(tmp_path: Path) -> None:
    tracker = _tracked(tmp_path / "run", generations=0)
    tracker.log_generation(0, {}, [_entry("g0c0", (1_700_000_000_000, 1_700_000_120_000))])
    runs = {run.info.run_name: run for run in tracker.client.search_runs([tracker.experiment_id])}
    assert (runs["g0c0"].info.start_time, runs["g0c0"].info.end_time) == (1_700_000_000_000, 1_700_000_120_000)
    assert runs["generation-0"].info.start_time == 1_700_000_000_000
    assert runs["g0c0"].data.tags["memevo.decision"] == "kept"


def _parents(tracker: Tracker) -> list[str]:
    return [run.info.run_id for run in tracker.client.search_runs([tracker.experiment_id], "attributes.run_name = 'pages'")]


@pytest.mark.parametrize("damage", ["delete", "garbage", "list"])
def test_a_lost_or_damaged_ids_file_is_rebuilt_from_the_store(tmp_path: Path, damage: str) -> None:
    run = tmp_path / "run"
    first = _tracked(run)
    parent = first.parent_id
    ids = run / MLFLOW_IDS_FILE
    if damage == "delete":
        ids.unlink()
    else:
        ids.write_text("{\"tracking_id\": \"ab" if damage == "garbage" else "[1, 2]")
    again = _tracked(run, generations=2)  # the resume logs generation 0 again and generation 1
    assert _parents(again) == [parent] and again.parent_id == parent  # no orphan RUNNING parent beside a new one
    params = again.client.get_run(parent).data.params
    assert params == {"name": "pages", "objective": "accuracy"}
    names = sorted(run.info.run_name for run in again.client.search_runs([again.experiment_id]))
    assert names == ["g0c0", "g1c0", "generation-0", "generation-1", "pages"]
    history = again.client.get_metric_history(parent, "objective/running_best_val_score")
    assert sorted(m.step for m in history) == [0, 1]  # generation 0's row is not written twice
    assert json.loads(ids.read_text())["parent"]["id"] == parent


def test_a_damaged_ids_file_beside_other_folders_runs_is_one_line(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'shared.db'}"
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        Tracker(run_dir=tmp_path / name, uri=store, experiment="pages").start("pages", {}, {})
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / MLFLOW_IDS_FILE).write_text("garbage")
    with pytest.raises(UserInputError, match="restore the file from a copy, or delete it and resume") as raised:
        Tracker(run_dir=tmp_path / "c", uri=store, experiment="pages")
    assert raised.value.source == str(tmp_path / "c" / MLFLOW_IDS_FILE)


@pytest.mark.parametrize("store", ["mlflow", "optuna"])
def test_a_truncated_store_is_one_line_naming_the_file(tmp_path: Path, store: str) -> None:
    database = tmp_path / f"{store}.db"
    if store == "mlflow":
        _tracked(tmp_path / "run")
        shutil.copy(tmp_path / "run" / "mlflow.db", database)
    else:
        optuna.create_study(storage=f"sqlite:///{database}", study_name="s").optimize(lambda t: 1.0, n_trials=3)
    database.write_bytes(database.read_bytes()[: database.stat().st_size // 3])
    with pytest.raises(UserInputError, match="is damaged") as raised:
        if store == "mlflow":
            open_tracking_store(f"sqlite:///{database}")
        else:
            Tuner(OptunaConfig(), {}, storage=f"sqlite:///{database}", study_name="s", first_trial={})
    assert raised.value.source == str(database) and "restore it from a copy" in str(raised.value)


def test_a_moved_or_copied_run_folder_shows_its_own_artifacts(tmp_path: Path) -> None:
    _tracked(tmp_path / "run")
    shutil.copytree(tmp_path / "run", tmp_path / "copy")
    shutil.move(tmp_path / "run", tmp_path / "moved")
    for folder in ("copy", "moved"):
        uri = f"sqlite:///{tmp_path / folder / 'mlflow.db'}"
        check_artifact_location(uri, "pages", source=None, field="name")  # the old folder is gone or another's
        client = MlflowClient(uri)
        experiment = client.get_experiment_by_name("pages")
        assert experiment.artifact_location.startswith((tmp_path / folder).as_uri())
        (run,) = client.search_runs([experiment.experiment_id], "attributes.run_name = 'g0c0'")
        assert [a.path for a in client.list_artifacts(run.info.run_id)] == ["a.txt"]
    with sqlite3.connect(tmp_path / "copy" / "mlflow.db") as db:
        assert all(str(tmp_path / "copy") in uri for (uri,) in db.execute("SELECT artifact_uri FROM runs"))


def test_a_trial_without_a_value_says_why_and_must_be_told_why(tmp_path: Path) -> None:
    tuner = Tuner(OptunaConfig(pruner="median", n_startup_trials=0, n_warmup_steps=0),
                  {"top_k": IntRange(low=1, high=5)}, storage=f"sqlite:///{tmp_path / 'optuna.db'}", study_name="s",
                  first_trial={})
    numbers = [tuner.ask()[0] for _ in range(3)]
    tuner.tell(numbers[0], 1.0, reason="ignored: the trial has a value")
    tuner.tell(numbers[1], None, reason="not run: generation ended (budget spent)")
    with pytest.raises(AssertionError, match="without a reason"):
        tuner.tell(numbers[2], None)
    trials = tuner.study.get_trials(deepcopy=False)
    assert trials[numbers[0]].state == TrialState.COMPLETE and DECISION_ATTR not in trials[numbers[0]].user_attrs
    assert trials[numbers[1]].state == TrialState.PRUNED
    assert trials[numbers[1]].user_attrs[DECISION_ATTR] == "not run: generation ended (budget spent)"


@pytest.mark.parametrize(("usage", "cell"), [
    (RoleUsage(calls=4, dollars=0.0123), "$0.0123"),
    (RoleUsage(calls=4, unpriced_calls=4), "unpriced"),
    (RoleUsage(calls=4, dollars=0.01, unpriced_calls=2), "$0.0100 + unpriced"),
    (RoleUsage(calls=4, cache_hits=4), "$0.0000"),
])
def test_a_spend_cell_says_unpriced_instead_of_zero(usage: RoleUsage, cell: str) -> None:
    from memevo.agents.llm.accounting import dollars_cell

    assert dollars_cell(usage) == cell


def test_the_run_folder_keeps_the_data_it_ran_on(tmp_path: Path) -> None:
    from memevo.environments.amemgym.data.io import load_items, save_items
    from memevo.evolve.config import EvolveConfig
    from memevo.evolve.run_data import keep_data
    from tests.doubles.category_backend import category_world

    items = category_world(3, 1)
    save_items(items, tmp_path / "users.json")
    config = EvolveConfig.model_validate({"seed": {"policy": {"kind": "awi"}}, "data": {"path": "users.json"},
                                          "source": tmp_path / "evolve.yaml"})
    record = keep_data(tmp_path / "run", config, items, data_hash="abc")
    kept = json.loads(record.read_text())
    assert kept["data_hash"] == "abc" and kept["source"] == str(tmp_path / "users.json")
    (tmp_path / "users.json").write_text("[]")  # the original changes after the run started
    assert [item.id for item in load_items(str(record.parent / kept["file"]))] == [item.id for item in items]
    keep_data(tmp_path / "run", config, [], data_hash="other")  # a resume keeps the first copy
    assert json.loads(record.read_text())["data_hash"] == "abc"


def test_a_store_left_half_made_by_a_killed_process_is_made_again(tmp_path: Path) -> None:
    """The store opens beside a run's first requests: a kill while MLflow creates its tables leaves only the file
    beside it, which the next open makes again."""
    (tmp_path / "mlflow.db.creating").write_bytes(b"SQLite format 3\x00 half-made")
    client = open_tracking_store(f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert [e.name for e in client.search_experiments()] == ["Default"]
    assert not (tmp_path / "mlflow.db.creating").exists() and (tmp_path / "mlflow.db").exists()
