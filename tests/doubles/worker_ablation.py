"""TEST DOUBLE setup: a tiny two-arm ablation on the category double, for the workers' tests and benchmark.

Every call of the ablation goes to one endpoint (a fault server serving ``CategoryBackend``); ``scores`` and
``evolution_runs`` read back what a run left, so runs with different worker counts can be compared.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from memevo.environments.amemgym.data.io import save_items
from memevo.evolve.ablation.records import find_arm_records
from tests.doubles.category_backend import category_world


def world() -> list:
    """The test users every run in this module shares."""
    return category_world(n_users=6, n_periods=2)


def write_ablation(folder: Path, endpoint: str, tracking_uri: str, name: str) -> Path:
    """A two-arm, two-seed ablation whose every call goes to ``endpoint``; returns its file."""
    folder.mkdir(parents=True, exist_ok=True)
    save_items(world(), folder / "data.json")
    llm = {"model": "category-double", "base_url": endpoint, "max_retries": 2}
    (folder / "base.yaml").write_text(yaml.safe_dump({
        "name": "tiny", "data": {"path": "data.json"},
        "seed": {"policy": {"kind": "awi", "llm": llm, "prompts": {"memory_types": "- commute"}}},
        "components": ["memory_types"], "feedback": {"mode": "complete"},
        "split": {"train": 2, "val": 2, "test": 2}, "budget": {"generations": 1, "candidates": 1},
        "episode": {"user_concurrency": 2, "rounds_init": 1, "rounds_update": 1}, "llm": {"proposer": llm},
        "tracking": {"register_prompts": False}}), encoding="utf-8")
    path = folder / "ablation.yaml"
    path.write_text(yaml.safe_dump({
        "name": name, "base": "base.yaml", "seeds": [0, 1], "tracking_uri": tracking_uri,
        "arms": [{"name": "no-evolution", "overrides": {"budget": {"generations": 0}, "feedback": {"mode": "none"}}},
                 {"name": "complete", "overrides": {"feedback": {"mode": "complete"}}}]}), encoding="utf-8")
    return path


def scores(run_dir: Path) -> dict[tuple[str, int], list[tuple[str, float, float]]]:
    return {(record.arm, record.seed): [(unit.user_id, unit.memory, unit.overall) for unit in record.units]
            for record in find_arm_records(run_dir)}


def evolution_runs(tracking_uri: str, experiment: str) -> tuple[str, list[str]]:
    """The ablation parent run's status and the names of the evolution runs nested under it."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri)
    found = client.get_experiment_by_name(experiment)
    assert found is not None
    parents = client.search_runs([found.experiment_id], "tags.`memevo.kind` = 'ablation'")
    assert len(parents) == 1
    parent = parents[0]
    children = client.search_runs([found.experiment_id], f"tags.`mlflow.parentRunId` = '{parent.info.run_id}'")
    return parent.info.status, sorted(run.info.run_name for run in children)
