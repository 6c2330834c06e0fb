"""``memevo ui`` takes everything tracker-specific from the tracker's UI: a new tracker is one module and one registry
entry (``tests.doubles.recording_tracker`` stands in for MLflow's here)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memevo.evolve.cli import main as cli
from memevo.evolve.config import DEFAULT_TRACKER
from tests.doubles import recording_tracker


@pytest.fixture(autouse=True)
def recording_ui(monkeypatch: pytest.MonkeyPatch) -> None:
    recording_tracker.register(monkeypatch, DEFAULT_TRACKER)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_ui_serves_the_trackers_ui_on_its_default_store_and_announces_its_pages(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"name": "exp", "tracking": {"uri": null}}')
    port = _free_port()
    result = CliRunner().invoke(cli.app, ["ui", "--run-dir", str(tmp_path), "--port", str(port)])
    assert result.exit_code == 0, result.output
    store = tmp_path / "recorded-store.json"
    assert result.output.splitlines() == [
        "a note on recorded-store.json",
        f"starting the Recorded UI on port {port} (store {store}) ...",
        f"Recorded UI: http://127.0.0.1:{port}/#/home/exp  (Ctrl-C to stop)",
        f"  second: http://127.0.0.1:{port}/#/second",
    ]
    assert json.loads(store.read_text())["job_execution"] == "recorded"  # the server ran with the UI's environment


def test_ui_of_a_store_that_serves_its_own_ui_starts_nothing(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli.app, ["ui", "--tracking-uri", "served:somewhere"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == ["Recorded UI: served:somewhere"]
