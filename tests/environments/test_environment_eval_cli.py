"""``memevo eval --environment``: a replayed benchmark evaluated end to end over HTTP, resumable, with the
AMemGym-only flags refused."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from memevo.core.errors import UserInputError
from memevo.environments.eval_cli import eval_command
from memevo.environments.registry import ENVIRONMENTS
from tests.doubles.registries import register_for_test
from tests.doubles.replay_environment import tiny_items


def remembered(body: dict, key: str) -> str:
    """The last value the conversation in the request gave ``key`` ("my pet is dog1")."""
    history = " ".join(str(message["content"]) for message in body["messages"])
    found = re.findall(rf"my {key} is (\w+)", history)
    return found[-1] if found else "unknown"


def _app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str) -> tuple[typer.Typer, list[str]]:
    register_for_test(monkeypatch, ENVIRONMENTS, "locomo", "tests.doubles.replay_environment:TinyReplayEnvironment")
    monkeypatch.setenv("MEMEVO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    agent = tmp_path / "agent.yaml"
    agent.write_text(f"kind: native\nllm:\n  model: gpt-4.1-mini\n  base_url: {url}\n")
    data = tmp_path / "bench.json"
    data.write_text(json.dumps([item.model_dump(mode="json") for item in tiny_items(2)]))
    app = typer.Typer()
    app.command()(eval_command)
    return app, ["--agent", str(agent), "--env", str(data), "--out", str(tmp_path / "out"), "--environment", "locomo"]


def test_a_replayed_benchmark_is_evaluated_scored_per_category_and_resumed(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    fault_server = pytest.importorskip("tests.doubles.fault_server")

    def reply(body):  # type: ignore[no-untyped-def]
        text = body["messages"][-1]["content"]
        if "Which is my home?" in text:
            return '{"answer": 2}' if remembered(body, "home").startswith("city") else '{"answer": 1}'
        return remembered(body, "pet" if "pet" in text else "home") if "?" in text else "ok"

    with fault_server.FaultServer(reply) as server:
        app, args = _app(tmp_path, monkeypatch, server.url)
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output + repr(result.exception)
        summary = json.loads((tmp_path / "out" / "summary.json").read_text())
        assert summary["environment"] == "locomo" and summary["n_items"] == 2
        assert summary["scores"]["accuracy"] == pytest.approx((1 + 2 / 3 + 1) / 3)
        assert summary["scores"]["random_baseline"] is None
        assert {c["category"] for c in summary["scores"]["per_category"]} == {"single-hop", "temporal"}
        printed = " ".join(result.output.split())  # lines wrap at the terminal's width
        assert "random n/a (free-text answers)" in printed and "per category (score (exact match, F1)): single-hop 1.000" in printed
        table = list(csv.DictReader((tmp_path / "out" / "questions.csv").open(encoding="utf-8")))
        assert [(row["category"], float(row["score"])) for row in table[:2]] == [("single-hop", 1.0),
                                                                                   ("temporal", pytest.approx(2 / 3))]
        assert table[1]["correct"] == "False"  # partial credit: the score says how much
        records = (tmp_path / "out" / "questions.jsonl").read_text().splitlines()
        assert len(records) == 6 and json.loads(records[1])["gold_answer"] == "the city0 area"
        calls = summary["usage"]["by_role"]["agent"]["calls"]
        again = CliRunner().invoke(app, [*args, "--resume"])
        assert again.exit_code == 0, again.output + repr(again.exception)
        resumed = json.loads((tmp_path / "out" / "summary.json").read_text())
        assert resumed["scores"] == summary["scores"]
        assert resumed["usage"]["by_role"]["agent"]["calls"] == calls  # the ledger spans both; the resume made none


def test_amemgym_only_flags_are_refused_on_another_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app, args = _app(tmp_path, monkeypatch, "http://127.0.0.1:9")
    result = CliRunner().invoke(app, [*args, "--upper-bound"])
    assert isinstance(result.exception, UserInputError) and result.exception.field == "--upper-bound"
    assert not (tmp_path / "out").exists()


def test_a_new_benchmark_with_its_own_option_needs_only_its_class_and_a_registry_entry(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fault_server = pytest.importorskip("tests.doubles.fault_server")
    register_for_test(monkeypatch, ENVIRONMENTS, "prefixed", "tests.doubles.replay_environment:PrefixedReplayEnvironment")
    with fault_server.FaultServer(lambda body: "ok") as server:
        app, args = _app(tmp_path, monkeypatch, server.url)
        args[args.index("locomo")] = "prefixed"
        result = CliRunner().invoke(app, [*args, "--env-option", "id_prefix=new-"])
        assert result.exit_code == 0, result.output + repr(result.exception)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["environment"] == "prefixed"
    assert [user["user_id"] for user in summary["user_scores"]] == ["new-conv-0", "new-conv-1"]


@pytest.mark.parametrize(("extra", "field", "owners"), [
    (["--env-option", "id_prefix=x"], "--env-option", "'id_prefix' is not a setting of locomo (it takes: none)"),
    (["--dialog-field", "dialog_mem0"], "--dialog-field", "applies to --environment memorybench only"),
    (["--env-option", "id_prefix"], "--env-option", "is not NAME=VALUE"),
    (["--diagnose"], "--diagnose", "applies to --environment amemgym only"),
])
def test_a_setting_the_environment_does_not_take_is_refused_naming_its_flag(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: list[str], field: str, owners: str) -> None:
    app, args = _app(tmp_path, monkeypatch, "http://127.0.0.1:9")
    result = CliRunner().invoke(app, [*args, *extra])
    assert isinstance(result.exception, UserInputError) and result.exception.field == field
    assert owners in str(result.exception)
    assert not (tmp_path / "out").exists()
