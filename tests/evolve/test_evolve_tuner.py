"""The Optuna tuner: defaults first, seeded and repeatable, pruning by intermediate values."""

from pathlib import Path

from optuna.trial import TrialState

from memevo.evolve.config import IntRange, OptunaConfig
from memevo.evolve.tuner import Tuner, draw_seed, make_sampler

SPACE = {"update_every": IntRange(low=1, high=6), "short_term": IntRange(choices=[0, 2, 4, 8]),
         "top_k": IntRange(low=5, high=50, step=5)}
DEFAULTS = {"update_every": 2, "short_term": 4, "top_k": 30}


def tuner(tmp_path: Path, name: str = "s", **options) -> Tuner:
    return Tuner(OptunaConfig(**options), SPACE, storage=f"sqlite:///{tmp_path / 'optuna.db'}", study_name=name,
                 first_trial=DEFAULTS)


def test_first_trial_is_the_defaults_and_later_ones_are_seeded(tmp_path: Path) -> None:
    first = tuner(tmp_path, "a")
    assert first.seed_trial() == 0
    assert first.study.trials[0].params == DEFAULTS
    first.tell(0, 0.5)
    asked_a = [first.ask()[1] for _ in range(3)]
    second = tuner(tmp_path, "b")
    second.tell(second.seed_trial(), 0.5)
    asked_b = [second.ask()[1] for _ in range(3)]
    assert asked_a == asked_b
    assert all(SPACE[k].contains(v) for params in asked_a for k, v in params.items())


def test_reopened_study_hands_out_the_trials_a_killed_process_asked(tmp_path: Path) -> None:
    first = tuner(tmp_path)
    first.tell(first.seed_trial(), 0.4)
    asked = [first.ask() for _ in range(2)]
    half = first.study.ask()  # killed inside its ask: only the first parameter was drawn (as ask draws it)
    first.study.sampler = make_sampler(first.config, draw_seed(first.config.seed, half.number, "update_every"))
    half.suggest_int("update_every", 1, 6)
    whole = tuner(tmp_path, "whole")
    whole.tell(whole.seed_trial(), 0.4)
    expected = [whole.ask() for _ in range(4)]
    again = tuner(tmp_path)
    assert again.seed_trial() == 0
    again.reuse_from(1)
    assert [again.ask() for _ in range(4)] == expected
    assert asked == expected[:2] and expected[2][0] == half.number
    assert [trial.state for trial in again.study.trials[1:]] == [TrialState.RUNNING] * 4
    again.tell(1, 0.1)
    again.tell(1, 0.9)  # idempotent: a resumed generation may tell again
    assert again.study.trials[1].value == 0.1


def test_median_pruner_stops_a_dominated_trial(tmp_path: Path) -> None:
    t = tuner(tmp_path, pruner="median", n_startup_trials=1)
    good = t.seed_trial()
    for step in range(3):
        assert not t.report(good, 0.8, step)
    t.tell(good, 0.8)
    bad, _ = t.ask()
    assert t.report(bad, 0.1, 0)
    t.tell(bad, None, reason="pruned by the median pruner")
    assert t.study.trials[bad].state == TrialState.PRUNED


def test_wilcoxon_pruner_uses_per_user_values(tmp_path: Path) -> None:
    t = tuner(tmp_path, pruner="wilcoxon", p_threshold=0.2)
    assert t.uses_per_user_values()
    good = t.seed_trial()
    for step in range(8):
        t.report(good, 0.9, step)
    t.tell(good, 0.9)
    bad, _ = t.ask()
    pruned = [t.report(bad, 0.1, step) for step in range(8)]
    assert any(pruned)
