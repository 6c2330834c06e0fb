"""``evaluate``/``write_outputs`` with scripted doubles, and ``memevo eval`` end to end over HTTP."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from memevo.agents.llm.accounting import RoleUsage, UsageReport
from memevo.core.errors import UserInputError
from memevo.environments.amemgym.evaluation import _headline, write_outputs
from memevo.environments.amemgym.evaluation import play_and_score as evaluate
from memevo.environments.eval_cli import eval_command
from memevo.environments.eval_run import prepare_out as _prepare_out
from memevo.environments.metrics import score_episodes
from memevo.environments.plot_process import PlotProcess
from memevo.environments.qa import build_upper_bound_prompt
from memevo.environments.runner import EpisodeConfig
from tests.doubles.scripted_agents import KeywordMemoryAgent, ScriptedSimulator, make_item
from tests.doubles.scripted_llm import ScriptedLLM

FIXTURE = Path(__file__).parents[1] / "fixtures" / "amemgym_small.json"


def _truthful_llm(items, unreadable: str = "\0"):  # type: ignore[no-untyped-def]
    """Answers upper-bound prompts correctly (the state is in the prompt), except prompts starting with
    ``unreadable``, which get a reply that cannot be parsed."""
    def handler(messages, role, wants_json):  # type: ignore[no-untyped-def]
        prompt = messages[0]["content"]
        if prompt.startswith(unreadable):
            return "I would rather not say."
        for item in items:
            for question in item.qas:
                for number, choice in enumerate(question.answer_choices, start=1):
                    state = dict(zip(question.required_info, choice.state, strict=True))
                    if prompt == build_upper_bound_prompt(question, state):
                        return json.dumps({"answer": number})
        raise AssertionError("unexpected prompt")
    return ScriptedLLM(handler)


async def test_evaluate_writes_every_output(tmp_path: Path) -> None:
    items = [make_item(f"u{i}", n_periods=3) for i in range(2)]
    queue = list(items)
    outcome = await evaluate(lambda: KeywordMemoryAgent(queue.pop(0), window=4), items, ScriptedSimulator(),
                             EpisodeConfig(diagnose=True), tmp_path, upper_bound_llm=_truthful_llm(items),
                             progress=False)
    assert outcome.scores.upper_bound == 1.0 and outcome.scores.memory_score is not None
    usage = UsageReport(by_role={"agent": RoleUsage(calls=3, prompt_tokens=10, dollars=0.5)})
    with PlotProcess() as plot:
        write_outputs(tmp_path, outcome, items, usage, {"agent": "keyword"}, plot)
        assert plot.wait() == tmp_path / "periods.png"
    rows = [json.loads(line) for line in (tmp_path / "questions.jsonl").read_text().splitlines()]
    assert len(rows) == 2 * 3 * 4 and {"question", "upper_bound", "probe_correct", "prompt"} <= set(rows[0])
    with (tmp_path / "questions.csv").open() as file:
        assert len(list(csv.DictReader(file))) == len(rows)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["scores"]["accuracy"] == outcome.scores.accuracy
    assert summary["usage"]["total"]["dollars"] == 0.5 and len(summary["user_scores"]) == 2
    with (tmp_path / "summary.csv").open() as file:
        table = list(csv.DictReader(file))
    assert [r["scope"] for r in table] == ["overall", "period 0", "period 1", "period 2"]
    assert table[0]["write_failure"] != ""
    assert (tmp_path / "usage.csv").read_text().splitlines()[0].startswith("role,calls")
    assert (tmp_path / "periods.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "upper_bound.json").exists()
    # a second evaluate in the same folder resumes: nothing is asked again
    llm = _truthful_llm(items)
    again = await evaluate(lambda: KeywordMemoryAgent(items[0]), items, ScriptedSimulator(),
                           EpisodeConfig(diagnose=True), tmp_path, upper_bound_llm=llm, progress=False)
    assert again.scores == outcome.scores and llm.calls == []


def test_out_folder_rules(tmp_path: Path) -> None:
    _prepare_out(tmp_path, resume=False)
    with pytest.raises(UserInputError, match="--resume"):
        _prepare_out(tmp_path, resume=True)
    (tmp_path / "run").mkdir()
    with pytest.raises(UserInputError, match="already holds a run"):
        _prepare_out(tmp_path, resume=False)
    _prepare_out(tmp_path, resume=True)


def _eval_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, agent_yaml: str) -> tuple[typer.Typer, Path]:
    """``memevo eval`` as a Typer app, an agent config file, and a private response cache."""
    config = tmp_path / "agent.yaml"
    config.write_text(agent_yaml)
    app = typer.Typer()
    app.command()(eval_command)
    monkeypatch.setenv("MEMEVO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    return app, config


def test_eval_command_end_to_end_over_http(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fault_server = pytest.importorskip("tests.doubles.fault_server")
    if not FIXTURE.exists():
        pytest.skip("fixture not built yet")

    def reply(body):  # type: ignore[no-untyped-def]
        text = body["messages"][-1]["content"]
        return '```json\n{"answer": 1}\n```' if '{"answer"' in text else "Sounds good, tell me more."

    with fault_server.FaultServer(reply) as server:
        app, config = _eval_app(tmp_path, monkeypatch,
                                f"kind: native\nllm:\n  model: gpt-4.1-mini\n  base_url: {server.url}\n")
        out = tmp_path / "out"
        args = ["--agent", str(config), "--env", str(FIXTURE), "--out", str(out), "--upper-bound", "--users", "1"]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output + repr(result.exception)
        assert "accuracy" in result.output
        summary = json.loads((out / "summary.json").read_text())
        assert summary["usage"]["by_role"]["agent"]["calls"] > 0
        assert summary["usage"]["by_role"]["upper_bound"]["calls"] > 0
        assert summary["scores"]["n_users"] == 1
        assert (out / "periods.png").exists()
        rerun = CliRunner().invoke(app, args)
        assert rerun.exit_code != 0 and isinstance(rerun.exception, UserInputError)
        template = CliRunner().invoke(app, [*args[:5], str(tmp_path / "t"), "--simulator", "template", "--diagnose"])
        assert template.exit_code == 0, template.output + repr(template.exception)
        # the server never answers a probe in JSON: no split is reported, and the summary says why
        diagnosed = json.loads((tmp_path / "t" / "summary.json").read_text())
        assert diagnosed["scores"]["failure"] is None
        assert diagnosed["scores"]["probes"]["probe_format_error_rate"] == 1.0
        assert diagnosed["usage"]["by_role"]["probe"]["calls"] > 0
        assert "write/read/util n/a" in template.output


def test_eval_command_amemgym_mode_reaches_policy_simulator_and_baseline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fault_server = pytest.importorskip("tests.doubles.fault_server")
    source = Path(__file__).parents[1] / "fixtures" / "amemgym_source"

    def reply(body):  # type: ignore[no-untyped-def]
        text = body["messages"][-1]["content"]
        return '{"answer": 2}' if "Pick one of" in text else "Sounds good, tell me more."

    with fault_server.FaultServer(reply) as server:
        app, config = _eval_app(tmp_path, monkeypatch,
                                f"kind: awi\nllm:\n  model: agent-model\n  base_url: {server.url}\n")
        out = tmp_path / "out"
        base = ["--agent", str(config), "--env", str(FIXTURE), "--out", str(out), "--users", "1", "--upper-bound",
                "--no-memory-baseline", "--amemgym-compat", "--simulator", "llm", "--simulator-model", "sim-model"]
        result = CliRunner().invoke(app, base)
        assert result.exit_code == 0, result.output + repr(result.exception)
        assert "memory score n/a (" in result.output and "memevo's own prompt wording" in result.output
        summary = json.loads((out / "summary.json").read_text())
        assert summary["simulator_model"] == "sim-model" and summary["prompts"] == "memevo"
        assert summary["config"]["amemgym_compat"] and not summary["config"]["constrained_answers"]
        assert summary["usage"]["by_role"]["baseline"]["calls"] > 0
        assert summary["scores"]["no_memory_accuracy"] is not None and summary["scores"]["write_requests"] > 0
        assert (out / "no_memory.json").exists()
        assert {body["model"] for body in server.requests} == {"agent-model", "sim-model"}
        # compat: nothing is decoded under a JSON schema; writes and the upper bound use plain JSON mode
        formats = [body.get("response_format") for body in server.requests]
        assert {f["type"] for f in formats if f} == {"json_object"} and None in formats

        from_source = CliRunner().invoke(app, [*base[:5], str(tmp_path / "src"), *base[6:],
                                                "--amemgym-source", str(source)])
        assert from_source.exit_code == 0, from_source.output + repr(from_source.exception)
        assert "memevo's own prompt wording" not in from_source.output
        assert json.loads((tmp_path / "src" / "summary.json").read_text())["prompts"].startswith("amemgym:")


async def test_plot_without_upper_bound(tmp_path: Path) -> None:
    from memevo.environments.metrics import score_episodes
    from memevo.environments.plots import plot_periods
    from memevo.environments.runner import run_episode

    item = make_item(n_periods=2)
    episode = await run_episode(KeywordMemoryAgent(item), item, ScriptedSimulator(), EpisodeConfig())
    path = plot_periods(score_episodes([episode], [item]), tmp_path, title="keyword")
    assert path == tmp_path / "periods.png" and path.read_bytes()[:4] == b"\x89PNG"


async def test_unparsed_upper_bound_replies_are_reported_in_summary_and_headline(tmp_path: Path) -> None:
    items = [make_item(f"u{i}", n_periods=3) for i in range(2)]
    queue = list(items)
    outcome = await evaluate(lambda: KeywordMemoryAgent(queue.pop(0), window=4), items, ScriptedSimulator(),
                             EpisodeConfig(), tmp_path, upper_bound_llm=_truthful_llm(items, "Question 0:"),
                             progress=False)
    unparsed = [e for e in outcome.upper_bound.entries if e.format_error]  # type: ignore[union-attr]
    assert unparsed and all(e.question_index == 0 for e in unparsed)
    scores = outcome.scores
    assert scores.upper_bound_format_errors == len(unparsed)
    assert scores.upper_bound_format_error_rate == pytest.approx(
        len(unparsed) / len(outcome.upper_bound.entries))  # type: ignore[union-attr]
    assert scores.upper_bound == pytest.approx(0.75)  # question 0 of 4 scored wrong everywhere
    with PlotProcess() as plot:
        write_outputs(tmp_path, outcome, items, UsageReport(), {"agent": "keyword"}, plot)
    summary = json.loads((tmp_path / "summary.json").read_text())["scores"]
    assert summary["upper_bound_format_errors"] == len(unparsed)
    assert summary["upper_bound_format_error_rate"] == pytest.approx(scores.upper_bound_format_error_rate)
    with (tmp_path / "summary.csv").open() as file:
        overall = next(csv.DictReader(file))
    assert int(overall["upper_bound_format_errors"]) == len(unparsed)
    assert float(overall["upper_bound_format_error_rate"]) == pytest.approx(scores.upper_bound_format_error_rate)
    headline = _headline(scores, tmp_path)
    assert f"upper-bound format errors {scores.upper_bound_format_error_rate:.1%}" in headline
    assert f"computed against an upper bound with {len(unparsed)} unparsed replies" in headline
    # the score itself is unchanged: the note explains it, it does not correct it
    assert scores == score_episodes(outcome.episodes, items, outcome.upper_bound)


async def test_headline_has_no_note_when_the_upper_bound_parsed(tmp_path: Path) -> None:
    items = [make_item("u0", n_periods=2)]
    outcome = await evaluate(lambda: KeywordMemoryAgent(items[0]), items, ScriptedSimulator(), EpisodeConfig(),
                             tmp_path, upper_bound_llm=_truthful_llm(items), progress=False)
    headline = _headline(outcome.scores, tmp_path)
    assert "upper-bound format errors 0.0%" in headline and "unparsed" not in headline
    without = _headline(score_episodes(outcome.episodes, items), tmp_path)
    assert "upper-bound format errors" not in without and "memory score n/a (no upper bound" in without


@pytest.mark.parametrize("flag", [["--concurrency", "3"], []])
def test_eval_concurrency_flag_or_environment_sets_the_limit_and_the_users_in_flight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flag: list[str]
) -> None:
    from tests.doubles.fault_server import FaultServer

    monkeypatch.setenv("MEMEVO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MEMEVO_CONCURRENCY", "5" if flag else "3")  # the flag wins over the environment
    with FaultServer(latency_s=0.02) as server:
        config = tmp_path / "agent.yaml"
        config.write_text(f"kind: native\nllm:\n  model: m\n  base_url: {server.url}\n  max_concurrency: 1\n")
        app = typer.Typer()
        app.command()(eval_command)
        out = tmp_path / "out"
        args = ["--agent", str(config), "--env", str(FIXTURE), "--out", str(out), "--simulator", "template", *flag]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output + repr(result.exception)
        assert server.peak_in_flight == 3  # questions of one period are asked at once, so the limit is reached
        assert server.connections == 3  # kept alive and reused: as many as can be in flight, no more
    assert json.loads((out / "summary.json").read_text())["config"]["max_concurrent_users"] == 3


