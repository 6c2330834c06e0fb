"""The evolve example shows how to choose an environment, test on another one and configure the judge; its
commented lines, switched on, still load."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memevo.evolve.cli.config_examples import EVOLVE
from memevo.evolve.config import load_evolve_config


def test_the_evolve_example_shows_environment_test_environment_and_judge_each_with_a_comment() -> None:
    for field in ("environment:", "# test_environment:", "# judge:"):
        (line,) = [line for line in EVOLVE.splitlines() if line.lstrip().startswith(field)]
        assert re.search(r"\S\s+# \w", line.lstrip("# ")), f"{field} has no explanation on its line"


def test_the_commented_environment_lines_switched_on_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("MEMEVO_MODEL", "test-model")
    switched = re.sub(r"^# (test_environment:.*\n)# (.*\n)# (.*\n)", r"\1\2\3", EVOLVE, flags=re.M)
    switched = switched.replace("  # judge:", "  judge:")
    path = tmp_path / "evolution.yaml"
    path.write_text(switched, encoding="utf-8")
    config = load_evolve_config(path)
    assert config.environment == "amemgym"
    assert config.test_environment is not None and config.test_environment.environment == "longmemeval"
    assert config.llm.judge is not None and config.llm.judge.model == "gpt-4o"
