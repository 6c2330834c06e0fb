"""An ablation of two tiny arms end to end through the real evolution engine, on the category test double.

The double stores only facts whose category the write prompt names; the seed names one of four, and
complete feedback reveals the others to the proposer. So the "complete" arm must beat "no-evolution"
on the same test users. The runs are deterministic, so the seeds are copies: the report must count them as
one replicate, say why the figures over seeds are n/a, and give the per-unit test as conditional.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml
from mlflow.tracking import MlflowClient

from memevo.core.errors import DamagedFileError, UserInputError
from memevo.environments.amemgym.data.io import save_items
from memevo.evolve.ablation import run as ablation_module
from memevo.evolve.ablation.config import load_ablation_config
from memevo.evolve.ablation.records import ARM_RECORD_FILE, find_arm_records
from memevo.evolve.ablation.run import load_manifest, run_ablation
from memevo.evolve.tracking.stores import default_tracking_uri
from tests.doubles.category_backend import CategoryBackend, CategoryHub, category_world


def _write_yaml(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def write_tiny_ablation(folder: Path, seeds: list[int]) -> Path:
    """Data, a base evolve config and a two-arm ablation config in ``folder``; returns the ablation file."""
    save_items(category_world(n_users=6, n_periods=2), folder / "data.json")
    _write_yaml(folder / "base.yaml", {
        "name": "tiny",
        "seed": {"policy": {"kind": "awi", "prompts": {"memory_types": "- commute"}}},
        "components": ["memory_types"],
        "feedback": {"mode": "complete"},
        "data": {"path": "data.json"},
        "split": {"train": 2, "val": 2, "test": 2},
        "budget": {"generations": 1, "candidates": 1},
        "episode": {"user_concurrency": 2},
        "tracking": {"register_prompts": False},
    })
    return _write_yaml(folder / "ablation.yaml", {
        "name": "tiny-ablation",
        "base": "base.yaml",
        "seeds": seeds,
        "arms": [
            {"name": "no-evolution", "overrides": {"budget": {"generations": 0}, "feedback": {"mode": "none"}}},
            {"name": "complete", "overrides": {"feedback": {"mode": "complete"}}},
        ],
    })


@pytest.fixture
def ablation_file(tmp_path: Path) -> Path:
    return write_tiny_ablation(tmp_path, seeds=[0, 1])


class Killed(Exception):
    """Stands for a kill in the middle of an (arm, seed)."""


def make_hub() -> CategoryHub:
    return CategoryHub(CategoryBackend(category_world(n_users=6, n_periods=2)))


def test_two_arm_ablation_end_to_end(tmp_path: Path, ablation_file: Path) -> None:
    config = load_ablation_config(ablation_file)
    run_dir = tmp_path / "run"
    outcome = run_ablation(config, run_dir=run_dir, hub=make_hub(), progress=lambda _: None)

    none_arm, complete_arm = outcome.summary.arms
    assert [none_arm.arm, complete_arm.arm] == ["no-evolution", "complete"]
    assert outcome.summary.metric == "accuracy" and outcome.summary.level == "seed"
    # the runs are deterministic, so the two seeds are copies: the report says so and counts one seed only
    assert none_arm.identical_seeds and complete_arm.identical_seeds
    assert none_arm.replicates == complete_arm.replicates == 1 and complete_arm.seeds == [0, 1]
    assert none_arm.n_units == complete_arm.n_units == 2
    assert complete_arm.mean.mean > none_arm.mean.mean and complete_arm.mean.low is None
    assert complete_arm.spend.calls > none_arm.spend.calls > 0
    comparison = outcome.summary.comparisons[0]
    assert comparison.test.n == 1 and comparison.test.t_p is None  # one replicate of each evolution
    assert comparison.conditional.n == 2 and comparison.conditional.mean_diff > 0
    assert "seed 0 only" in comparison.conditional.note
    # the engine's test scores are kept per seed: the memory score or its reason, and the failure cell
    for record in find_arm_records(run_dir):
        assert record.scores is not None and record.scores.n_users == 2
    for arm in outcome.summary.arms:
        assert (arm.memory is None) == (arm.memory_na_reason is not None)
        assert arm.failure_cell.startswith("n/a (no diagnosis")

    markdown = outcome.outputs["markdown"].read_text()
    assert "accuracy, mean over seeds [95% bootstrap CI]" in markdown
    assert "paired t p" in markdown and "Wilcoxon p" in markdown
    assert "n/a (only 1 seed: the spread between seeds is unknown)" in markdown
    assert "Conditional on the evolved prompts" in markdown and "not independent replicates" in markdown
    with outcome.outputs["arms_csv"].open() as handle:
        rows = {row["arm"]: row for row in csv.DictReader(handle)}
    assert set(rows) == {"no-evolution", "complete"} and rows["complete"]["low"] == ""
    with outcome.outputs["tests_csv"].open() as handle:
        tests = list(csv.DictReader(handle))
    assert {row["arm"] for row in tests} == {"complete"} and tests[0]["conditional_n"] == "2"
    for key in ("period_plot", "failure_plot"):
        assert outcome.outputs[key].stat().st_size > 1000

    manifest = load_manifest(run_dir)
    assert manifest is not None and manifest.parent_run_id == outcome.parent_run_id
    client = MlflowClient(tracking_uri=manifest.tracking_uri)
    parent = client.get_run(outcome.parent_run_id)
    assert parent.info.status == "FINISHED"
    assert parent.data.metrics["complete.accuracy"] == pytest.approx(complete_arm.mean.mean)
    assert "complete.accuracy_ci_low" not in parent.data.metrics  # undefined, so not logged as a number
    artifacts = {entry.path for entry in client.list_artifacts(outcome.parent_run_id)}
    assert {"ablation.md", "ablation_arms.csv", "ablation_periods.png", "ablation_failures.png"} <= artifacts
    for record in find_arm_records(run_dir):
        assert record.evolution_run_id is not None
        child = client.get_run(record.evolution_run_id)
        assert child.data.tags["mlflow.parentRunId"] == outcome.parent_run_id
        assert parent.data.tags[f"evolution_run.{record.arm}.seed-{record.seed}"] == record.evolution_run_id


def test_resume_skips_finished_arms_and_refuses_a_reused_folder(
    tmp_path: Path, ablation_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = load_ablation_config(ablation_file)
    run_dir = tmp_path / "run"
    real_run = ablation_module.run_evolution
    calls: list[tuple[str, bool]] = []
    crashed: list[bool] = []

    def crash_on_second(evolve_config, *, run_dir, hub, resume):  # noqa: ANN001 - mirrors run_evolution
        calls.append((run_dir.relative_to(tmp_path / "run").as_posix(), resume))
        if len(calls) == 2 and not crashed:
            crashed.append(True)
            run_dir.mkdir(parents=True, exist_ok=True)
            (run_dir / "partial.txt").write_text("killed here")
            raise Killed
        return real_run(evolve_config, run_dir=run_dir, hub=hub, resume=resume)

    monkeypatch.setattr(ablation_module, "run_evolution", crash_on_second)
    with pytest.raises(Killed):
        run_ablation(config, run_dir=run_dir, hub=make_hub(), progress=lambda _: None)
    manifest = load_manifest(run_dir)
    assert manifest is not None
    assert MlflowClient(tracking_uri=manifest.tracking_uri).get_run(manifest.parent_run_id).info.status == "FAILED"

    with pytest.raises(UserInputError, match="--resume"):
        run_ablation(config, run_dir=run_dir, hub=make_hub(), progress=lambda _: None)

    calls.clear()
    outcome = run_ablation(config, run_dir=run_dir, hub=make_hub(), resume=True, progress=lambda _: None)
    # (no-evolution, 0) finished before the crash and is skipped; (no-evolution, 1) resumes its folder
    assert calls[0] == ("no-evolution/seed-1", True)
    assert all(path != "no-evolution/seed-0" for path, _ in calls)
    assert len(calls) == 3 and outcome.parent_run_id == manifest.parent_run_id
    assert len(find_arm_records(run_dir)) == 4


def test_a_resume_may_widen_the_arms_but_not_change_what_they_compute(tmp_path: Path, ablation_file: Path) -> None:
    config = load_ablation_config(ablation_file)
    run_dir = tmp_path / "run"
    run_ablation(config, run_dir=run_dir, hub=make_hub(), progress=lambda _: None)

    wider = config.model_copy(deep=True)
    wider.arms[1].overrides["episode"] = {"user_concurrency": 4, "candidate_concurrency": 3}
    wider.arms[1].overrides["llm"] = {"agent": {"max_concurrency": 8}}
    outcome = run_ablation(wider, run_dir=run_dir, hub=make_hub(), resume=True, progress=lambda _: None)
    assert len(find_arm_records(run_dir)) == 4 and outcome.parent_run_id == load_manifest(run_dir).parent_run_id

    longer = config.model_copy(deep=True)
    longer.arms[1].overrides["budget"] = {"generations": 2}
    with pytest.raises(UserInputError, match="config changed since this ablation started") as error:
        run_ablation(longer, run_dir=run_dir, hub=make_hub(), resume=True, progress=lambda _: None)
    assert error.value.field == "arms"


def test_an_ablation_started_before_min_effect_resumes_and_takes_the_new_value(
    tmp_path: Path, ablation_file: Path
) -> None:
    config = load_ablation_config(ablation_file)
    run_dir = tmp_path / "run"
    store = default_tracking_uri(run_dir)
    ablation_module._prepare(config, run_dir, resume=False, default_store=store)
    # the manifest as an earlier version wrote it: no min_effect, in its own fields or in the config
    stored = json.loads((run_dir / ablation_module.MANIFEST_FILE).read_text())
    stored.pop("min_effect")
    stored["config"].pop("min_effect")
    (run_dir / ablation_module.MANIFEST_FILE).write_text(json.dumps(stored))
    old_digest = load_manifest(run_dir).digest()

    resumed = ablation_module._prepare(config.model_copy(update={"min_effect": 0.1}), run_dir, resume=True,
                                       default_store=store)
    assert resumed.min_effect == 0.1 and load_manifest(run_dir).min_effect == 0.1
    assert resumed.digest() == old_digest  # the MLflow parent is still found by its tag


def test_damaged_ablation_files_are_recomputed_or_named_in_one_line(tmp_path: Path, ablation_file: Path) -> None:
    config = load_ablation_config(ablation_file)
    run_dir = tmp_path / "run"
    first = run_ablation(config, run_dir=run_dir, hub=make_hub(), progress=lambda _: None)
    record = run_dir / "complete" / "seed-1" / ARM_RECORD_FILE
    assert record.is_file()
    record.write_text(record.read_text(encoding="utf-8")[:40], encoding="utf-8")

    with pytest.raises(DamagedFileError, match="resume the ablation") as error:
        find_arm_records(run_dir)  # what `memevo report` reads: one line naming the file
    assert error.value.source == str(record)
    again = run_ablation(config, run_dir=run_dir, hub=make_hub(), resume=True, progress=lambda _: None)
    assert record.with_name(ARM_RECORD_FILE + ".damaged").is_file()  # set aside, then written again
    assert again.summary.model_dump() == first.summary.model_dump()

    manifest = run_dir / ablation_module.MANIFEST_FILE
    manifest.write_text("{", encoding="utf-8")
    with pytest.raises(DamagedFileError, match="delete it and resume") as error:
        run_ablation(config, run_dir=run_dir, hub=make_hub(), resume=True, progress=lambda _: None)
    assert error.value.source == str(manifest)
