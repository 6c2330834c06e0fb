"""The Python API's arguments: configs from a file, a mapping or an ``EvolveConfig`` with the default acceptance
are taken as the command line takes the file; wrong types and values are a ``UserInputError`` naming the parameter,
before any folder is made."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from experiments import api_example
from memevo.agents.policy import MemoryPolicy
from memevo.core.errors import UserInputError
from memevo.evolve.api import _settings, evaluate, optimize
from memevo.evolve.cli.config_examples import EXAMPLES
from memevo.evolve.config import load_evolve_config


@pytest.fixture
def example_file(tmp_path: Path) -> Path:
    path = tmp_path / "e.yaml"
    path.write_text(EXAMPLES["evolve"])
    return path


def test_the_example_config_is_taken_from_a_path_a_mapping_and_an_evolve_config(example_file: Path) -> None:
    as_file = load_evolve_config(example_file)
    mapping = yaml.safe_load(example_file.read_text())
    for given in (example_file, str(example_file), as_file, mapping):
        settings = _settings(given, None, None, None)
        assert settings.strategy.acceptance == as_file.strategy.acceptance == "sequential"
        assert settings.identity_payload() == as_file.identity_payload()


def test_a_config_setting_mean_only_fields_keeps_them(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    data = yaml.safe_load(EXAMPLES["evolve"])
    data["strategy"] = {"acceptance": "mean", "order": "train_first"}
    path.write_text(yaml.safe_dump(data))
    settings = _settings(load_evolve_config(path), None, None, None)
    assert settings.strategy.acceptance == "mean" and settings.strategy.order == "train_first"


USERS = api_example.make_users(2)
NATIVE = MemoryPolicy(kind="native")
EVALUATE_CASES: list[tuple[str, dict[str, Any]]] = [
    ("policy", {"policy": 123}),
    ("data", {"data": 5}),
    ("out", {"out": None}),
    ("agent_class", {"agent_class": 42}),
    ("agent_class", {"agent_class": api_example.NotesAgent.__new__(api_example.NotesAgent)}),
    ("simulator", {"simulator": "bogus"}),
    ("simulator_model", {"simulator_model": 3}),
    ("users", {"users": -1}),
    ("users", {"users": "two"}),
    ("concurrency", {"concurrency": 0}),
    ("rounds_init", {"rounds_init": "two"}),
    ("rounds_update", {"rounds_update": 0}),
    ("seed", {"seed": "7"}),
    ("resume", {"resume": "yes"}),
    ("use_cache", {"use_cache": 1}),
]


@pytest.mark.parametrize(("name", "changed"), EVALUATE_CASES, ids=[f"{name}-{i}" for i, (name, _) in
                                                                     enumerate(EVALUATE_CASES)])
def test_evaluate_names_the_bad_parameter(name: str, changed: dict[str, Any], tmp_path: Path) -> None:
    arguments: dict[str, Any] = {"policy": NATIVE, "data": USERS, "out": tmp_path / "out", **changed}
    with pytest.raises(UserInputError) as caught:
        evaluate(**arguments)
    assert caught.value.field == name and "--" not in str(caught.value)
    assert not (tmp_path / "out").exists()


OPTIMIZE_CASES: list[tuple[str, dict[str, Any]]] = [
    ("seed_candidate", {"seed_candidate": 7}),
    ("data", {"data": 5}),
    ("run_dir", {"run_dir": None}),
    ("config", {"config": 42}),
    ("agent_class", {"agent_class": 42}),
    ("concurrency", {"concurrency": 0}),
    ("resume", {"resume": None}),
]


@pytest.mark.parametrize(("name", "changed"), OPTIMIZE_CASES, ids=[name for name, _ in OPTIMIZE_CASES])
def test_optimize_names_the_bad_parameter(name: str, changed: dict[str, Any], tmp_path: Path) -> None:
    arguments: dict[str, Any] = {"seed_candidate": NATIVE, "data": USERS, "run_dir": tmp_path / "run", **changed}
    with pytest.raises(UserInputError) as caught:
        optimize(**arguments)
    assert caught.value.field == name and "--" not in str(caught.value)
    assert not (tmp_path / "run").exists()
