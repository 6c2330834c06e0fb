"""TEST DOUBLE setup: a tiny evolution sweep on the category double, for the evolve workers' tests and benchmark.

Every call goes to one endpoint (a fault server serving ``CategoryBackend``). The strategy runs a generation's
candidates at once (acceptance mean, train first, so Optuna's median pruner judges them), which is what several
workers can share. ``outcome``, ``trials`` and ``candidate_runs`` read back what a run left, so a run by several
workers can be compared with one process.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from memevo.environments.amemgym.data.io import save_items
from tests.doubles.category_backend import category_world


def world() -> list:
    return category_world(n_users=8, n_periods=2)


NARROW_SPACE: dict[str, dict[str, list[int]]] = {"update_every": {"choices": [1, 2]}, "short_term": {"choices": [0, 2, 4]}}
"""The tests' hyperparameters: 6 settings, so a later generation may find no new candidate."""
WIDE_SPACE: dict[str, dict[str, int]] = {"update_every": {"low": 1, "high": 3}, "short_term": {"low": 0, "high": 8}}
"""27 settings: enough new candidates for every generation of the workers benchmark."""


def write_evolution(folder: Path, endpoint: str, tracking_uri: str, name: str, *, generations: int = 2,
                    candidates: int = 3, space: dict[str, Any] | None = None) -> Path:
    """An evolution config whose every call goes to ``endpoint``, tuning ``space`` (default ``NARROW_SPACE``);
    returns its file."""
    folder.mkdir(parents=True, exist_ok=True)
    save_items(world(), folder / "data.json")
    llm = {"model": "category-double", "base_url": endpoint, "max_retries": 2}
    path = folder / "evolve.yaml"
    path.write_text(yaml.safe_dump({
        "name": name, "data": {"path": "data.json"},
        "seed": {"policy": {"kind": "awi", "llm": llm, "prompts": {"memory_types": "- commute"}}},
        "components": ["memory_types"], "feedback": {"mode": "complete"},
        "hyperparameters": space or NARROW_SPACE,
        "split": {"train": 4, "val": 2, "test": 2},
        "budget": {"generations": generations, "candidates": candidates},
        "strategy": {"acceptance": "mean", "order": "train_first", "minibatch": None},
        "optuna": {"seed": 0, "pruner": "median", "n_startup_trials": 1},
        "episode": {"user_concurrency": 2, "rounds_init": 1, "rounds_update": 1}, "llm": {"proposer": llm},
        "tracking": {"uri": tracking_uri, "register_prompts": False}}), encoding="utf-8")
    return path


def outcome(run_dir: Path) -> dict[str, Any]:
    """What the run decided and scored: its result without usage (calls differ when a killed worker's
    episode is played again) and every generation's outcome."""
    result = json.loads((run_dir / "result.json").read_text(encoding="utf-8"))
    result.pop("usage")
    return result


def trials(storage: str, study: str) -> list[tuple[int, str, dict[str, int], float | None, dict[int, float]]]:
    import optuna

    loaded = optuna.load_study(study_name=study, storage=storage)
    return [(trial.number, trial.state.name, trial.params, trial.value, trial.intermediate_values)
            for trial in loaded.get_trials(deepcopy=False)]


def candidate_runs(tracking_uri: str, experiment: str) -> list[str]:
    """The names of every run in the evolution's experiment (parent, generations, candidates), sorted."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri)
    found = client.get_experiment_by_name(experiment)
    assert found is not None
    return sorted(run.info.run_name for run in client.search_runs([found.experiment_id], max_results=1000))
