"""``tracking.tracker`` names the run's tracker: the default one is left out of the config as logged and hashed (runs
written before trackers had names resume, and log the same config), and an unknown name stops the run in one line
before anything is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from memevo.core.errors import UserInputError
from memevo.evolve.runtime import check_stores
from tests.doubles import recording_tracker
from tests.evolve.test_evolve_loop import make_config


def test_the_default_tracker_is_left_out_of_the_logged_config_and_another_is_kept(tmp_path: Path,
                                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    default = make_config(tmp_path, tracking={"enabled": True})
    assert default.tracking.tracker == "mlflow"
    assert default.hash_payload()["tracking"] == {"enabled": True, "uri": None, "experiment": None,
                                                  "register_prompts": True}
    named = make_config(tmp_path, tracking={"tracker": recording_tracker.NAME})
    assert named.hash_payload()["tracking"]["tracker"] == recording_tracker.NAME
    assert named.identity_payload() != make_config(tmp_path).identity_payload()  # a resume may not swap trackers
    recording_tracker.register(monkeypatch)
    check_stores(named, tmp_path / "run")  # a registered tracker's store is its own to check


def test_an_unknown_tracker_is_one_line_naming_the_field_and_the_known_ones(tmp_path: Path) -> None:
    config = make_config(tmp_path, tracking={"tracker": "wandb"})
    with pytest.raises(UserInputError) as raised:
        check_stores(config, tmp_path / "run")
    assert raised.value.field == "tracking.tracker"
    assert raised.value.message == "unknown tracker 'wandb' (known: mlflow)"
    assert raised.value.source == str(config.source or "config")
    assert not (tmp_path / "run").exists()
