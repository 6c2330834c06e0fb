"""A resume whose Optuna database was deleted: the candidates' trials are gone, and the run ends in one line naming
the database and the remedy instead of an IndexError."""

from __future__ import annotations

from pathlib import Path

import pytest

from memevo.core.errors import DamagedFileError
from memevo.core.setting_names import PYTHON, spelled_for
from memevo.evolve.config import IntRange, OptunaConfig
from memevo.evolve.tuner import Tuner

SPACE = {"top_k": IntRange(low=5, high=50, step=5)}


def make(tmp_path: Path) -> Tuner:
    return Tuner(OptunaConfig(), SPACE, storage=f"sqlite:///{tmp_path / 'optuna.db'}", study_name="s",
                 first_trial={"top_k": 30})


def test_a_deleted_study_ends_in_one_line(tmp_path: Path) -> None:
    first = make(tmp_path)
    numbers = [first.ask()[0] for _ in range(3)]
    (tmp_path / "optuna.db").unlink()
    again = make(tmp_path)  # the resume: a new, empty study
    with pytest.raises(DamagedFileError) as caught:
        again.report(numbers[-1], 0.5, step=0)
    assert "optuna.db" in str(caught.value) and "no trial 2" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_its_remedy_names_the_run_folder_as_the_caller_does(tmp_path: Path) -> None:
    first = make(tmp_path)
    number = [first.ask()[0] for _ in range(3)][-1]
    (tmp_path / "optuna.db").unlink()
    with pytest.raises(DamagedFileError, match=r"new --run-dir\)"):
        make(tmp_path).report(number, 0.5, step=0)
    with spelled_for(PYTHON), pytest.raises(DamagedFileError, match=r"new run_dir\)"):  # memevo.optimize's caller
        make(tmp_path).report(number, 0.5, step=0)
