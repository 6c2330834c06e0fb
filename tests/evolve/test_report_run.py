"""``memevo report`` re-renders evolutions and ablations from stored records without touching any LLM."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memevo.agents.llm import hub as hub_module
from memevo.agents.llm.gateway import LLMGateway
from memevo.core.errors import UserInputError
from memevo.evolve.ablation.config import load_ablation_config
from memevo.evolve.ablation.run import run_ablation
from memevo.evolve.presentation.report import report_run
from tests.doubles.category_backend import CategoryBackend
from tests.evolve.test_ablation_run import make_hub, write_tiny_ablation


def _forbid_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("report must not call or build an LLM client")

    monkeypatch.setattr(CategoryBackend, "chat", refuse)
    monkeypatch.setattr(LLMGateway, "chat", refuse)
    monkeypatch.setattr(hub_module.LLMHub, "__init__", refuse)


@pytest.fixture(scope="module")
def stored_ablation(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("ablation")
    run_dir = folder / "run"
    config = load_ablation_config(write_tiny_ablation(folder, seeds=[0]))
    run_ablation(config, run_dir=run_dir, hub=make_hub(), progress=lambda _: None)
    return run_dir


@pytest.fixture
def finished_ablation(stored_ablation: Path, tmp_path: Path) -> Path:
    """A private copy, so a test may delete records."""
    return Path(shutil.copytree(stored_ablation, tmp_path / "run"))


def test_report_of_ablation_and_evolution_uses_no_llm(finished_ablation: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _forbid_llm(monkeypatch)
    for name in ("ablation.md", "ablation_periods.png", "ablation_failures.png"):
        (finished_ablation / name).unlink()
    text = report_run(finished_ablation)
    assert "| complete | 0 | 2 |" in text and "Wilcoxon p" in text and "memevo ui --tracking-uri sqlite:///" in text
    for name in ("ablation.md", "ablation_periods.png", "ablation_failures.png"):
        assert (finished_ablation / name).exists()

    evolution = finished_ablation / "complete" / "seed-0"
    text = report_run(evolution)
    assert "Stopped: max generations" in text
    assert "| generation | kept |" in text and "best - seed" in text and "| total |" in text
    objective = json.loads((evolution / "config.json").read_text())["objective"].replace("_", " ")
    assert f"Scores are the run's objective, {objective}," in text
    assert "### memory_types (evolved)" in text and "```diff" in text and "| update_every |" in text
    assert _ragged_table_rows(text) == []
    for name in ("test_periods.png", "test_failures.png", "score_per_generation.png"):
        assert (evolution / "report" / name).read_bytes()[:4] == b"\x89PNG"


def _ragged_table_rows(markdown: str) -> list[str]:
    """Rows whose cell count differs from their table's header (text outside the last ``|`` included)."""
    ragged, width = [], None
    for line in markdown.splitlines():
        if not line.startswith("|"):
            width = None
            continue
        cells = line.count("|") - 1 + (0 if line.rstrip().endswith("|") else 1)
        width = width or cells
        if cells != width:
            ragged.append(line)
    return ragged


def test_report_of_unfinished_runs_says_how_to_resume(finished_ablation: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _forbid_llm(monkeypatch)
    evolution = finished_ablation / "complete" / "seed-0"
    (evolution / "result.json").unlink()
    text = report_run(evolution)
    assert "Unfinished" in text and "--resume" in text
    recorded = json.loads((evolution / "generations" / "gen_001" / "decisions.json").read_text())["decisions"]
    assert recorded and all(f"| {decision['label']} |" in text and f"| {decision['text']} |" in text
                            for decision in recorded)  # the planned candidates' decisions, as their records word them
    (evolution / "arm_result.json").unlink()
    assert "Unfinished" in report_run(finished_ablation) and "complete/seed-0" in report_run(finished_ablation)


def test_report_cli_and_bad_folder(finished_ablation: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _forbid_llm(monkeypatch)
    from memevo.evolve.cli.main import app

    result = CliRunner().invoke(app, ["report", str(finished_ablation)])
    assert result.exit_code == 0 and "Paired tests against **no-evolution**" in result.output
    with pytest.raises(UserInputError, match="neither an evolution"):
        report_run(tmp_path)
    with pytest.raises(UserInputError, match="no such run folder"):
        report_run(tmp_path / "missing")
