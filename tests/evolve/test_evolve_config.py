"""The evolve config: valid files load, bad ones name the file and the field path."""

import logging
from pathlib import Path

import pytest
import yaml

from memevo.core.errors import UserInputError
from memevo.evolve.config import IntRange, SplitConfig, load_evolve_config, parse_evolve_config

MINIMAL = {"seed": {"policy": {"kind": "awi"}}, "data": {"path": "data.json"}}


def write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "evolve.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_minimal_config_takes_defaults(tmp_path: Path) -> None:
    config = load_evolve_config(write(tmp_path, MINIMAL))
    assert config.components == ["memory_types"]
    assert config.objective == "accuracy" and config.strategy.proposers == ["reflection"]
    assert (config.strategy.parents, config.strategy.acceptance, config.strategy.minibatch) == ("elitist", "sequential", 2)
    assert config.strategy.order == "validation_first" and config.strategy.resamples == 2
    assert load_evolve_config(write(tmp_path, {**MINIMAL, "strategy": {"resamples": 0}})).strategy.resamples == 0
    accuracy = load_evolve_config(write(tmp_path, {**MINIMAL, "upper_bound": False, "objective": "accuracy"}))
    assert accuracy.objective == "accuracy"
    assert config.feedback.mode.value == "complete"
    assert config.optuna.sampler == "tpe" and config.optuna.pruner == "median"
    assert config.resolve_path("data.json") == tmp_path.resolve() / "data.json"


def test_full_config(tmp_path: Path) -> None:
    data = {
        **MINIMAL,
        "components": ["write_prompt"],
        "hyperparameters": {"update_every": {"low": 1, "high": 4}, "top_k": {"choices": [10, 30]}},
        "feedback": {"mode": "complete", "with_ground_truth": True, "with_exposed_states": True},
        "split": {"train": 0.5, "val": 0.25, "test": 0.25, "seed": 3},
        "budget": {"generations": 5, "candidates": 3, "max_calls": 1000, "max_dollars": 1.5, "patience": 2},
        "protocol": "amemgym_period",
        "llm": {"proposer": {"model": "gpt-4.1-mini", "temperature": 0.7}},
        "optuna": {"storage": "sqlite:///x.db", "sampler": "random", "seed": 7, "pruner": "wilcoxon"},
        "tracking": {"uri": "sqlite:///m.db", "experiment": "exp"},
    }
    config = load_evolve_config(write(tmp_path, data))
    assert config.hyperparameters["top_k"].choices == [10, 30]
    assert config.llm.proposer.model == "gpt-4.1-mini"
    assert config.protocol == "amemgym_period"


@pytest.mark.parametrize(("strategy", "field"), [({"order": "train_first"}, "order"), ({"minibatch": None}, "minibatch"),
                                                  ({"complete_parent_train": False}, "complete_parent_train"),
                                                  ({"parents": "pareto", "order": "train_first"}, "order"),
                                                  ({"parents": "pareto"}, "parents")])
def test_an_option_of_the_mean_rule_without_acceptance_reads_as_mean_and_says_so(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, strategy: dict, field: str) -> None:
    caplog.set_level(logging.WARNING, logger="memevo.evolve")
    path = write(tmp_path, {**MINIMAL, "split": {"val": 2}, "strategy": strategy})
    assert load_evolve_config(path).strategy.acceptance == "mean"
    load_evolve_config(path)  # an ablation reads its base config once per arm and seed: said once
    (said,) = [record.getMessage() for record in caplog.records]
    assert said.startswith(f"{path.resolve()}: strategy.{field} applies to acceptance mean or paired")
    chosen = write(tmp_path, {**MINIMAL, "strategy": {**strategy, "acceptance": "paired"}})
    assert load_evolve_config(chosen).strategy.acceptance == "paired"  # a rule the file names is kept
    assert len(caplog.records) == 1


@pytest.mark.parametrize("field", ["order", "minibatch", "first_accepted", "complete_parent_train", "resamples"])
def test_an_outer_loop_strategy_field_set_for_the_in_episode_protocol_is_named(tmp_path: Path, field: str) -> None:
    values = {"order": "train_first", "minibatch": 2, "first_accepted": True, "complete_parent_train": True,
              "resamples": 2}
    in_episode = {**MINIMAL, "protocol": "amemgym_period"}
    path = write(tmp_path, {**in_episode, "strategy": {"proposers": ["delta"], field: values[field]}})
    with pytest.raises(UserInputError, match="amemgym_period") as caught:
        load_evolve_config(path)
    assert caught.value.field == f"strategy.{field}" and str(path.resolve()) in str(caught.value)
    assert load_evolve_config(write(tmp_path, {**in_episode, "strategy": {"proposers": ["delta"]}})).strategy.minibatch
    assert load_evolve_config(write(tmp_path, {**MINIMAL, "strategy": {field: values[field]}}))


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"budget": {"generations": -1}}, "budget.generations"),
        ({"hyperparameters": {"update_every": {"low": 5, "high": 2}}}, "hyperparameters.update_every"),
        ({"hyperparameters": {"temperature": {"low": 1, "high": 2}}}, "hyperparameters.temperature"),
        ({"feedback": {"mode": "everything"}}, "feedback.mode"),
        ({"optuna": {"pruner": "hyperband"}}, "optuna.pruner"),
        ({"seed": {}}, "seed"),
        ({"unknown_key": 1}, "unknown_key"),
        ({"llm": {"proposer": {"temperature": 9}}}, "llm.proposer.temperature"),
        ({"strategy": {"proposers": ["reflection", "genetic"]}}, "strategy.proposers.1"),
        ({"strategy": {"parents": "tournament"}}, "strategy.parents"),
        ({"strategy": {"acceptance": "bayes"}}, "strategy.acceptance"),
        ({"strategy": {"acceptance": "paired", "confidence": 1.0}}, "strategy.confidence"),
        ({"strategy": {"confidence": 0}}, "strategy.confidence"),
        ({"strategy": {"minibatch": 0}}, "strategy.minibatch"),
        ({"strategy": {"resamples": -1}}, "strategy.resamples"),
        ({"strategy": {"resamples": "twice"}}, "strategy.resamples"),
        ({"strategy": {"parents": "pareto"}, "split": {"train": 2, "val": 1, "test": 1}}, "strategy.parents"),
        ({"upper_bound": False, "objective": "amemgym_memory_score"}, "objective"),
        ({"objective": "f1"}, "objective"),
        ({"feedback_max_chars": 6000}, "feedback_max_chars"),
    ],
)
def test_bad_field_is_named(tmp_path: Path, patch: dict, field: str) -> None:
    path = write(tmp_path, {**MINIMAL, **patch})
    with pytest.raises(UserInputError) as caught:
        load_evolve_config(path)
    assert caught.value.field == field
    assert str(path.resolve()) in str(caught.value)


def test_missing_file_and_bad_yaml(tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match="No such file") as caught:
        load_evolve_config(tmp_path / "nope.yaml")
    assert "nope.yaml" in str(caught.value)
    bad = tmp_path / "bad.yaml"
    bad.write_text("seed: [unclosed")
    with pytest.raises(UserInputError, match="YAML"):
        load_evolve_config(bad)
    listed = tmp_path / "list.yaml"
    listed.write_text("- seed\n- data\n")
    with pytest.raises(UserInputError, match="mapping"):
        load_evolve_config(listed)
    with pytest.raises(UserInputError, match="mapping"):
        parse_evolve_config(["a list"])


def test_split_counts_and_fractions() -> None:
    assert SplitConfig(train=0.5, val=0.25, test=0.25).counts(8) == (4, 2, 2)
    assert SplitConfig(train=2, val=1, test=1).counts(10) == (2, 1, 1)
    with pytest.raises(UserInputError, match="split"):
        SplitConfig(train=5, val=5, test=5).counts(10)


def test_int_range_contains() -> None:
    assert IntRange(low=2, high=8, step=2).contains(4)
    assert not IntRange(low=2, high=8, step=2).contains(5)
    assert IntRange(choices=[10, 30]).contains(30)


@pytest.mark.parametrize(
    ("split", "protocol", "field"),
    [
        ({"train": 2, "val": 0, "test": 2}, "outer_loop", "split.val"),
        ({"train": 2, "val": 2, "test": 0}, "outer_loop", "split.test"),
        ({"train": 0, "val": 2, "test": 2}, "outer_loop", "split.train"),
        ({"train": 0, "val": 0, "test": 0}, "amemgym_period", "split"),
    ],
)
def test_empty_split_the_protocol_needs_is_rejected(tmp_path: Path, split: dict, protocol: str, field: str) -> None:
    path = write(tmp_path, {**MINIMAL, "split": split, "protocol": protocol})
    with pytest.raises(UserInputError, match="at least 1|no users") as caught:
        load_evolve_config(path)
    assert caught.value.field == field
    assert str(path.resolve()) in str(caught.value)


def test_amemgym_protocol_needs_only_one_non_empty_split(tmp_path: Path) -> None:
    config = load_evolve_config(write(tmp_path, {**MINIMAL, "protocol": "amemgym_period",
                                                 "split": {"train": 0, "val": 0, "test": 4}}))
    assert config.required_splits == ()
    assert config.split.counts(6, config.required_splits) == (0, 0, 4)
    with pytest.raises(UserInputError, match="none of the 6 users") as caught:
        SplitConfig(train=0.05, val=0, test=0).counts(6, config.required_splits)
    assert caught.value.field == "split"


def test_fraction_rounding_to_zero_users_is_named() -> None:
    split = SplitConfig(train=0.5, val=0.1, test=0.4)
    assert split.counts(10) == (5, 1, 4)
    with pytest.raises(UserInputError, match="0 validation users") as caught:
        split.counts(4, source="cfg.yaml")
    assert caught.value.field == "split.val" and "cfg.yaml" in str(caught.value)
    assert split.counts(4, ("train", "test")) == (2, 0, 2)


@pytest.mark.parametrize(
    ("episode", "compat", "expected"),
    [({}, False, True), ({}, True, False), ({"constrained_answers": False}, False, False),
     ({"constrained_answers": True}, True, True)],
)
def test_constrained_answers_reach_the_episode(tmp_path: Path, episode: dict, compat: bool, expected: bool) -> None:
    from memevo.evolve.runtime import episode_config

    data = {**MINIMAL, "seed": {"policy": {"kind": "awi", "amemgym_compat": compat}}, "episode": episode}
    config = load_evolve_config(write(tmp_path, data))
    assert episode_config(config, config.seed.policy).constrained_answers is expected
