"""The ablation config: defaults, overrides, seeds, same-users check and field-naming errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from memevo.core.errors import UserInputError
from memevo.evolve.ablation.config import deep_merge, load_ablation_config, resolve_all, resolve_arm

BASE = {
    "name": "base",
    "seed": {"policy": {"kind": "awi"}},
    "data": {"synth": {"n_users": 4}},
    "split": {"train": 2, "val": 1, "test": 1},
    "budget": {"generations": 2, "candidates": 1},
}


def _write(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


@pytest.fixture
def base_file(tmp_path: Path) -> Path:
    return _write(tmp_path / "base.yaml", BASE)


def test_defaults_are_the_three_feedback_arms(tmp_path: Path, base_file: Path) -> None:
    config = load_ablation_config(_write(tmp_path / "abl.yaml", {"name": "fb", "base": "base.yaml"}))
    assert config.arm_names == ["no-evolution", "question-only", "complete"]
    assert config.seeds == [0, 1, 2] and config.baseline_arm == "no-evolution"
    none = resolve_arm(config, config.arms[0], 1)
    assert none.budget.generations == 0 and none.feedback.mode == "none"
    assert none.optuna.seed == 1 and none.name == "fb-no-evolution-seed1"
    complete = resolve_arm(config, config.arms[2], 2)
    assert complete.feedback.mode == "complete" and complete.budget.generations == 2
    assert complete.split == none.split  # the user split never follows the run seed
    assert len(resolve_all(config)) == 9


def test_bad_override_names_arm_and_field(tmp_path: Path, base_file: Path) -> None:
    config = load_ablation_config(
        _write(tmp_path / "abl.yaml", {"base": "base.yaml", "arms": [{"name": "x", "overrides": {"budget": {"generationz": 1}}}]})
    )
    with pytest.raises(UserInputError, match="arm 'x'") as error:
        resolve_all(config)
    assert error.value.field == "budget.generationz"


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"base": "base.yaml", "arms": [{"name": "a"}, {"name": "a"}]}, None),
        ({"base": "base.yaml", "baseline": "zzz"}, None),
        ({"arms": [{"name": "a"}]}, None),
        ({"base": "base.yaml", "seedz": [1]}, "seedz"),
        ({"base": "base.yaml", "arms": [{"name": "a b"}]}, "arms.0.name"),
        ({"base": "base.yaml", "seed_fields": ["data.synth.seed"]}, None),
    ],
)
def test_invalid_ablation_configs_are_rejected(tmp_path: Path, base_file: Path, data: dict, field: str | None) -> None:
    path = _write(tmp_path / "abl.yaml", data)
    with pytest.raises(UserInputError) as error:
        load_ablation_config(path)
    assert str(path) in str(error.value)
    if field:
        assert error.value.field == field


def test_arms_on_different_users_are_refused(tmp_path: Path, base_file: Path) -> None:
    other = _write(tmp_path / "other.yaml", {**BASE, "split": {"train": 1, "val": 1, "test": 2}})
    config = load_ablation_config(
        _write(tmp_path / "abl.yaml", {"base": "base.yaml", "seeds": [0], "arms": [{"name": "a"}, {"name": "b", "config": other.name}]})
    )
    with pytest.raises(UserInputError, match="different users") as error:
        resolve_all(config)
    assert error.value.field == "arms.b.split"


def test_split_seed_may_follow_the_seed_but_stays_shared_across_arms(tmp_path: Path, base_file: Path) -> None:
    config = load_ablation_config(
        _write(tmp_path / "abl.yaml", {"base": "base.yaml", "seeds": [3, 4], "seed_fields": ["split.seed", "optuna.seed"]})
    )
    resolved = resolve_all(config)
    assert resolved[("complete", 3)].split.seed == resolved[("no-evolution", 3)].split.seed == 3
    assert resolved[("complete", 4)].split.seed == 4
    pinned = {"name": "complete", "overrides": {"split": {"seed": 9}}}
    bad = load_ablation_config(
        _write(tmp_path / "bad.yaml", {"base": "base.yaml", "seeds": [3], "seed_fields": ["optuna.seed"],
                                       "arms": [{"name": "a"}, pinned]})
    )
    with pytest.raises(UserInputError, match="for seed 3"):
        resolve_all(bad)


def test_missing_base_file_names_it(tmp_path: Path) -> None:
    config = load_ablation_config(_write(tmp_path / "abl.yaml", {"base": "nope.yaml", "seeds": [0]}))
    with pytest.raises(UserInputError, match="nope.yaml"):
        resolve_all(config)


def test_deep_merge_replaces_leaves_and_merges_mappings() -> None:
    merged = deep_merge({"a": {"b": 1, "c": [1]}, "d": 2}, {"a": {"c": [2]}, "e": 3})
    assert merged == {"a": {"b": 1, "c": [2]}, "d": 2, "e": 3}


def test_ablate_command_reports_a_bad_config_by_name(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from memevo.evolve.cli.main import app

    path = _write(tmp_path / "abl.yaml", {"base": "base.yaml", "arms": [{"name": "x", "bogus": 1}]})
    result = CliRunner().invoke(app, ["ablate", str(path), "--run-dir", str(tmp_path / "run")])
    assert isinstance(result.exception, UserInputError)
    assert str(path) in str(result.exception) and result.exception.field == "arms.0.bogus"
    assert not (tmp_path / "run").exists()
