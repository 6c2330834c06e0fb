"""The MLflow and Optuna payloads of an evolution, written with the real clients and read back through their APIs."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import mlflow
import optuna
import pytest
from mlflow import MlflowClient
from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID

from memevo.agents.base import ComponentSpec
from memevo.agents.policy import MemoryPolicy
from memevo.evolve.tracking.payloads import (
    BEST_TAG,
    DIFF_ARTIFACT,
    EXPERIMENT_KIND_TAG,
    EXPERIMENT_NOTE_TAG,
    KEPT_TAG,
    candidate_diff,
    candidate_tags,
    experiment_tags,
    generation_metrics,
    generation_points,
    generation_run_name,
    generation_tags,
    objective_summary,
    parent_tags,
    prompt_version_tags,
    split_dataset_input,
)
from memevo.evolve.tuner import trial_attributes

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning", "ignore::UserWarning")

TYPES = ComponentSpec(name="memory_types", description="what to remember", default="- commute\n- beverage\n")
WRITE = ComponentSpec(name="write_prompt", description="how to write", default="Write notes.\n")


@dataclass
class Outcome:
    generation: int
    train: dict[str, float]
    val: dict[str, float]
    parent_val: float
    pruned: list[str] = field(default_factory=list)


# The demo run of issue 12: the seed, one improving generation, then two whose candidates were all pruned.
HISTORY = [
    Outcome(0, {"seed": 0.5}, {"seed": 0.458}, 0.458),
    Outcome(1, {"a": 1.0, "b": 0.25, "c": 0.25}, {"a": 1.0}, 1.0),
    Outcome(2, {"b": 0.25, "c": 0.25}, {}, 1.0),
    Outcome(3, {"b": 0.3}, {"b": 0.2}, 1.0),
]


def test_running_best_is_the_kept_score_not_the_last_generations() -> None:
    points = generation_points(HISTORY)
    metrics = [generation_metrics(point) for point in points]
    assert [m["objective/running_best_val_score"] for m in metrics] == [0.458, 1.0, 1.0, 1.0]
    assert "objective/generation_best_val_score" not in metrics[2]  # every candidate pruned: no validation score invented
    assert metrics[3]["objective/generation_best_val_score"] == 0.2
    assert objective_summary(points) == pytest.approx(
        {"objective/initial_val_score": 0.458, "objective/final_val_score": 1.0, "objective/val_score_gain": 0.542})


def test_diff_uses_the_seeds_default_text_and_lists_hyperparameter_changes() -> None:
    seed = MemoryPolicy(kind="awi", update_every=2)  # memory_types left at its default
    child = seed.with_prompts(memory_types="- commute\n- beverage\n- genre\n").with_hyperparameters(update_every=1)
    text = candidate_diff(seed, child, [TYPES, WRITE], before_name="seed", after_name="g1c0")
    assert "| update_every | 2 | 1 |" in text
    assert "--- seed/memory_types" in text and "+- genre" in text and "-- commute" not in text  # the seed was not empty
    assert "write_prompt" not in text.split("## memory_types")[1]  # an unchanged component shows no diff
    tuned = candidate_diff(seed, seed.with_hyperparameters(short_term=0), [TYPES], before_name="seed", after_name="g1c1")
    assert "| short_term | 4 | 0 |" in tuned and "Prompts: unchanged." in tuned


def test_payloads_are_accepted_by_mlflow_and_found_through_its_api(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    mlflow.set_tracking_uri(uri)
    client = MlflowClient(tracking_uri=uri)
    experiment = client.create_experiment("demo", artifact_location=(tmp_path / "art").as_uri())
    for key, value in experiment_tags(name="demo", protocol="outer_loop", components=["memory_types"],
                                      feedback_mode="complete").items():
        client.set_experiment_tag(experiment, key, value)
    parent = client.create_run(experiment, run_name="demo").info.run_id
    gen = client.create_run(experiment, run_name="generation-1", tags={MLFLOW_PARENT_RUN_ID: parent}).info.run_id
    kept = client.create_run(experiment, run_name="g1c0-aaaa", tags={MLFLOW_PARENT_RUN_ID: gen}).info.run_id
    other = client.create_run(experiment, run_name="g1c1-bbbb", tags={MLFLOW_PARENT_RUN_ID: gen}).info.run_id
    for run, candidate in ((kept, "aaaa"), (other, "bbbb")):
        for key, value in candidate_tags(candidate, kept_id="aaaa", generation=1, origin="proposal").items():
            client.set_tag(run, key, value)
    for key, value in generation_tags(kept_id="aaaa", kept_label="g1c0-aaaa", improved=True).items():
        client.set_tag(gen, key, value)
    for key, value in parent_tags(best_id="aaaa", best_label="g1c0-aaaa").items():
        client.set_tag(parent, key, value)
    client.set_tag(kept, BEST_TAG, "true")
    for point in generation_points(HISTORY):
        for key, value in generation_metrics(point).items():
            client.log_metric(parent, key, value, step=point.generation)
    seed = MemoryPolicy(kind="awi")
    client.log_text(kept, candidate_diff(seed, seed.with_prompts(memory_types="- genre\n"), [TYPES],
                                         before_name="seed", after_name="g1c0-aaaa"), DIFF_ARTIFACT)
    client.log_inputs(parent, [split_dataset_input({"train": ["u1", "u2"], "val": ["u3"], "test": ["u4"]},
                                                   name="demo-users", source=str(tmp_path / "data.json"),
                                                   digest="abc123")])
    version = mlflow.genai.register_prompt(
        name="demo-memory_types", template="- genre",
        tags=prompt_version_tags(candidate_id="aaaa", generation=1, scores={"val_score": 1.0, "test_accuracy": None},
                                 run_id=kept))
    client.link_prompt_version_to_run(kept, f"prompts:/demo-memory_types/{version.version}")

    tags = client.get_experiment(experiment).tags
    assert tags[EXPERIMENT_KIND_TAG] == "custom_model_development" and "objective/running_best_val_score" in tags[EXPERIMENT_NOTE_TAG]
    found = client.search_runs([experiment], filter_string=f"tags.`{KEPT_TAG}` = 'true'")
    assert [run.info.run_name for run in found] == ["g1c0-aaaa"]
    assert [r.info.run_id for r in client.search_runs([experiment], f"tags.`{BEST_TAG}` = 'true'")] == [kept]
    assert client.get_run(gen).data.tags["memevo.kept_candidate"] == "g1c0-aaaa"
    assert generation_run_name(1, kept_label="g1c0-aaaa", improved=True) == "generation-1 (kept g1c0-aaaa)"
    assert generation_run_name(0, kept_label="g0c0-seed", improved=False) == "generation-0 (seed g0c0-seed)"
    history = client.get_metric_history(parent, "objective/running_best_val_score")
    assert [(m.step, m.value) for m in history] == [(0, 0.458), (1, 1.0), (2, 1.0), (3, 1.0)]
    assert DIFF_ARTIFACT in [f.path for f in client.list_artifacts(kept)]
    inputs = client.get_run(parent).inputs.dataset_inputs
    assert inputs[0].dataset.name == "demo-users" and inputs[0].dataset.digest == "abc123"
    assert [(tag.key, tag.value) for tag in inputs[0].tags] == [("mlflow.data.context", "split")]
    stored = client.load_prompt("prompts:/demo-memory_types/1")
    assert stored.tags["val_score"] == "1.0000" and stored.tags["mlflow_run_id"] == kept and "test_accuracy" not in stored.tags
    linked = json.loads(client.get_run(kept).data.tags["mlflow.linkedPrompts"])
    assert linked == [{"name": "demo-memory_types", "version": "1"}]


def test_trial_attributes_and_objective_name_are_read_back_from_optuna(tmp_path: Path) -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(storage=f"sqlite:///{tmp_path / 'optuna.db'}", study_name="demo", direction="maximize")
    study.set_metric_names(["accuracy"])
    for label, train, val, kept in (("g0c0-seed", 0.5, 0.458, False), ("g1c0-aaaa", 0.9, 1.0, True)):
        trial = study.ask()
        # attributes go on before tell: Optuna refuses to change a finished trial
        for key, value in trial_attributes(candidate_id=label[-4:], label=label, generation=int(label[1]),
                                           objective="accuracy", val_score=val, links={"mlflow_run_id": f"run-{label}"},
                                           kept=kept,
                                           decision="kept" if kept else "rejected").items():
            trial.set_user_attr(key, value)
        study.tell(trial, train)
    again = optuna.load_study(study_name="demo", storage=f"sqlite:///{tmp_path / 'optuna.db'}")
    assert again.metric_names == ["accuracy"]
    kept = [t for t in again.trials if t.user_attrs["kept"]]
    assert [(t.user_attrs["candidate"], t.user_attrs["val_accuracy"], t.user_attrs["mlflow_run_id"]) for t in kept] == [
        ("g1c0-aaaa", 1.0, "run-g1c0-aaaa")]
    with pytest.raises(optuna.exceptions.UpdateFinishedTrialError):  # so the tracker must set them before tell
        again._storage.set_trial_user_attr(again.trials[0]._trial_id, "late", 1)


def test_score_plot_of_a_memory_score_run_is_on_the_memory_score_scale(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from memevo.evolve.presentation import generation_plot

    saved = {}
    monkeypatch.setattr(generation_plot, "save_figure", lambda figure, folder, name: saved.setdefault("f", figure))
    generation_plot.plot_score_per_generation(generation_points(HISTORY), tmp_path, title="t", objective="memory_score",
                                              random_baseline=0.33, upper_bound=0.9, reference_users="test users")
    (axis,) = saved["f"].axes
    assert axis.get_ylabel().startswith("AMemGym memory score (0 = random")
    references = {line.get_label(): line.get_ydata()[0] for line in axis.get_lines() if line.get_label() in
                  ("random", "upper bound")}
    assert references == {"random": 0.0, "upper bound": 1.0}  # not the accuracy references passed in


def test_the_parent_runs_last_row_carries_the_whole_runs_spend_judge_included() -> None:
    from types import SimpleNamespace

    from memevo.agents.llm.accounting import RoleUsage, UsageReport
    from memevo.evolve.tracking.entries import final_metrics

    scores = SimpleNamespace(accuracy=0.5, memory_score=None, pooled_memory_score=None, per_category=[])
    usage = UsageReport(by_role={"agent": RoleUsage(calls=59, prompt_tokens=900, completion_tokens=100),
                                 "judge": RoleUsage(calls=3, prompt_tokens=60, completion_tokens=3)})
    result = SimpleNamespace(seed_scores=scores, best_scores=scores, usage=usage, objective="accuracy",
                             seed_user_scores=[], best_user_scores=[])
    metrics = final_metrics(result, "score")  # type: ignore[arg-type]
    assert metrics["spend/calls_judge"] == 3 and metrics["spend/tokens_judge"] == 63
    assert metrics["spend/calls_agent"] == 59 and metrics["test/best_score"] == 0.5


def test_the_parent_run_counts_the_requests_the_run_cancelled_apart_from_a_kills() -> None:
    from types import SimpleNamespace

    from memevo.agents.llm.accounting import RoleUsage, UsageReport
    from memevo.evolve.tracking.entries import final_metrics

    scores = SimpleNamespace(accuracy=0.5, memory_score=None, pooled_memory_score=None, per_category=[])
    usage = UsageReport(by_role={"agent": RoleUsage(calls=59, cancelled_calls=4, unknown_calls=1),
                                 "simulator": RoleUsage(calls=20, cancelled_calls=2)})
    result = SimpleNamespace(seed_scores=scores, best_scores=scores, usage=usage, objective="accuracy",
                             seed_user_scores=[], best_user_scores=[])
    assert final_metrics(result, "score")["spend/cancelled_calls"] == 6  # type: ignore[arg-type]
    result.usage = UsageReport(by_role={"agent": RoleUsage(calls=59)})
    assert final_metrics(result, "score")["spend/cancelled_calls"] == 0  # type: ignore[arg-type]
