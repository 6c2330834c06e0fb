"""Constrained answers: the QA and probe JSON schemas reach the agent, the upper bound's LLM and the
wire (``response_format``), and ``constrained_answers=False`` / ``--free-answers`` sends none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from memevo.core.errors import UserInputError
from memevo.environments.amemgym.data.io import save_items
from memevo.environments.diagnosis import probe_schema
from memevo.environments.eval_cli import eval_command
from memevo.environments.metrics import compute_upper_bound
from memevo.environments.qa import answer_schema
from memevo.environments.runner import EpisodeConfig, run_episode
from memevo.environments.store import RunStore
from tests.doubles.scripted_agents import OracleAgent, ScriptedSimulator, make_item
from tests.doubles.scripted_llm import ScriptedLLM


def test_answer_schema_enumerates_the_option_numbers() -> None:
    assert answer_schema(3) == {
        "type": "object",
        "properties": {"answer": {"type": "integer", "enum": [1, 2, 3]}},
        "required": ["answer"],
    }


def test_probe_schema_requires_every_type_with_its_own_options() -> None:
    schema = probe_schema({"diet": ["vegan", "omnivore"], "pet": ["cat", "dog"]})
    assert schema["properties"] == {
        "diet": {"type": "string", "enum": ["vegan", "omnivore"]},
        "pet": {"type": "string", "enum": ["cat", "dog"]},
    }
    assert schema["required"] == ["diet", "pet"] and schema["type"] == "object"


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, True),
        ({"amemgym_compat": True}, False),
        ({"amemgym_compat": True, "constrained_answers": True}, True),
        ({"constrained_answers": False}, False),
        ({"constrained_answers": None, "amemgym_compat": False}, True),
    ],
)
def test_constrained_answers_defaults_to_the_opposite_of_compat(fields: dict, expected: bool) -> None:
    config = EpisodeConfig(**fields)
    assert config.constrained_answers is expected
    assert config.protocol()["constrained_answers"] is expected


async def test_questions_and_probes_are_asked_with_their_schemas() -> None:
    item = make_item(n_periods=2)
    agent = OracleAgent(item)
    episode = await run_episode(agent, item, ScriptedSimulator(), EpisodeConfig(diagnose=True))
    assert episode.periods[1].qa[0].correct
    probes = {json.dumps(probe_schema({k: item.state_schema[k] for k in q.required_info})) for q in item.qas}
    answers = {json.dumps(answer_schema(len(q.answer_choices))) for q in item.qas}
    sent = [json.dumps(call["json_schema"]) for call in agent.answer_calls]
    assert len(sent) == 2 * 2 * len(item.qas)  # per period: every question and every probe
    assert set(sent) == probes | answers


async def test_free_answers_send_no_schema() -> None:
    item = make_item(n_periods=2)
    agent = OracleAgent(item)
    await run_episode(agent, item, ScriptedSimulator(), EpisodeConfig(diagnose=True, constrained_answers=False))
    assert agent.answer_calls and all(call["json_schema"] is None for call in agent.answer_calls)


async def test_resume_refuses_a_different_answer_constraint(tmp_path: Path) -> None:
    item = make_item(n_periods=2)
    store = RunStore(tmp_path)
    await run_episode(OracleAgent(item), item, ScriptedSimulator(), EpisodeConfig(), store=store)
    with pytest.raises(UserInputError, match="protocol"):
        await run_episode(OracleAgent(item), item, ScriptedSimulator(), EpisodeConfig(constrained_answers=False),
                          store=store)


@pytest.mark.parametrize("constrained", [True, False])
async def test_upper_bound_uses_the_same_constraint(constrained: bool) -> None:
    item = make_item(n_periods=2)
    llm = ScriptedLLM(lambda messages, role, wants_json: '{"answer": 1}')
    table = await compute_upper_bound(llm, [item], constrained=constrained)
    assert table.constrained is constrained and llm.calls
    for call in llm.calls:
        n_choices = next(len(q.answer_choices) for q in item.qas if call["messages"][0]["content"].startswith(q.query))
        assert call["json_schema"] == (answer_schema(n_choices) if constrained else None)
        assert call["json"]  # unconstrained still asks for plain JSON mode, as before


def test_eval_sends_the_schema_on_the_wire_unless_free_answers(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    fault_server = pytest.importorskip("tests.doubles.fault_server")
    item = make_item(n_periods=1)
    save_items([item], tmp_path / "data.json")

    def reply(body):  # type: ignore[no-untyped-def]
        return '{"answer": 1}' if '{"answer"' in body["messages"][-1]["content"] else "Sounds good."

    monkeypatch.setenv("MEMEVO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    app = typer.Typer()
    app.command()(eval_command)
    formats = {}
    for flag in ("--constrained-answers", "--free-answers"):
        with fault_server.FaultServer(reply) as server:
            config = tmp_path / "agent.yaml"
            config.write_text(f"kind: native\nllm:\n  model: gpt-4.1-mini\n  base_url: {server.url}\n")
            out = tmp_path / flag.strip("-")
            args = ["--agent", str(config), "--env", str(tmp_path / "data.json"), "--out", str(out),
                    "--upper-bound", "--simulator", "template", "--no-cache", flag]
            result = CliRunner().invoke(app, args)
            assert result.exit_code == 0, result.output + repr(result.exception)
            formats[flag] = [_asked(item, body) for body in server.requests
                              if '{"answer"' in body["messages"][-1]["content"]]
        summary = json.loads((out / "summary.json").read_text())
        assert summary["config"]["constrained_answers"] is (flag == "--constrained-answers")
        assert json.loads((out / "upper_bound.json").read_text())["constrained"] is (flag == "--constrained-answers")
    n_questions = len(item.qas)
    constrained = formats["--constrained-answers"]
    assert sorted(bound for bound, _, _ in constrained) == [False] * n_questions + [True] * n_questions
    assert all(sent == {"type": "json_object", "schema": answer_schema(len(question.answer_choices))}
               for _, question, sent in constrained)
    free = formats["--free-answers"]
    assert len(free) == 2 * n_questions
    assert all(sent is None for bound, _, sent in free if not bound)  # the agent: free decoding
    assert all(sent == {"type": "json_object"} for bound, _, sent in free if bound)  # bare LLM: plain JSON mode


def _asked(item, body):  # type: ignore[no-untyped-def]
    """(is it the upper bound's request, the question asked, the response_format sent)."""
    text = body["messages"][-1]["content"]
    question = next(q for q in item.qas if text.startswith(q.query))
    return "My current relevant preferences" in text, question, body.get("response_format")
