"""``memevo eval`` against the real local model (SmolLM2-135M): the whole path on a one-period world.

A 135M model rarely follows the answer format on its own, so the default run constrains decoding to the
answer's JSON schema (llama.cpp turns it into a grammar); the check is that this makes nearly every
reply readable, and that a free run still records its (many) format errors instead of hiding them
behind random answers. The world is tiny (one user, one period, four questions) to stay fast on a CPU.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from memevo.environments.amemgym.data.io import save_items
from memevo.environments.eval_cli import eval_command
from tests.doubles.scripted_agents import make_item

pytestmark = pytest.mark.integration

CONSTRAINED_FORMAT_ERROR_BOUND = 0.25
"""Measured on two users of this world (native agent, ``max_tokens`` 32): constrained, 0 of 8 question,
0 of 8 upper-bound and 0 of 8 probe replies were unreadable; free, 8 of 8 of each (the model nests
objects under "answer"). The bound leaves room for a reply cut off by ``max_tokens``."""


def _eval(tmp_path: Path, name: str, *flags: str) -> tuple[dict, list[dict], dict]:
    app = typer.Typer()
    app.command()(eval_command)
    out = tmp_path / name
    args = ["--agent", str(tmp_path / "agent.yaml"), "--env", str(tmp_path / "data.json"), "--out", str(out),
            "--upper-bound", *flags]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output + repr(result.exception)
    rows = [json.loads(line) for line in (out / "questions.jsonl").read_text().splitlines()]
    return (json.loads((out / "summary.json").read_text()), rows,
            json.loads((out / "upper_bound.json").read_text()))


def test_eval_with_the_local_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMEVO_CACHE_DIR", str(tmp_path / "cache"))
    save_items([make_item(n_periods=1)], tmp_path / "data.json")
    (tmp_path / "agent.yaml").write_text("kind: native\nllm:\n  model: smollm2-135m-instruct\n  max_tokens: 32\n")

    summary, rows, table = _eval(tmp_path, "constrained")
    scores = summary["scores"]
    assert scores["n_questions"] == 4 and scores["random_fallback_rate"] == 0.0
    assert [row["format_error"] for row in rows] == [row["choice"] is None for row in rows]
    assert summary["usage"]["by_role"]["agent"]["calls"] >= 5 + 4  # replies, questions
    assert summary["usage"]["by_role"]["upper_bound"]["calls"] >= 4
    assert scores["format_error_rate"] <= CONSTRAINED_FORMAT_ERROR_BOUND, [row["raw_reply"] for row in rows]
    assert table["constrained"] and sum(e["format_error"] for e in table["entries"]) <= len(table["entries"]) // 4

    free_summary, free_rows, free_table = _eval(tmp_path, "free", "--free-answers", "--simulator", "template")
    assert not free_table["constrained"] and free_summary["config"]["constrained_answers"] is False
    assert [row["format_error"] for row in free_rows] == [row["choice"] is None for row in free_rows]
    print(f"format-error rate: constrained {scores['format_error_rate']:.2f}, "
          f"free {free_summary['scores']['format_error_rate']:.2f}")
