"""AMemGym compatibility: prompt texts read from a checkout, and compat mode reaching every part."""

from __future__ import annotations

import ast
import json
import os
from datetime import datetime
from pathlib import Path

import pytest

from memevo.agents.awi import AWIAgent
from memevo.agents.errors import UserInputError
from memevo.agents.policy import MemoryPolicy
from memevo.environments.amemgym_prompts import (
    OVERALL_FILE,
    SIMULATOR_FILE,
    UPPER_BOUND_FILE,
    format_template,
    load_amemgym_prompts,
)
from memevo.environments.diagnosis import build_probe_prompt
from memevo.environments.qa import build_qa_prompt, build_upper_bound_prompt
from memevo.environments.simulators.llm import LLMUserSimulator
from tests.doubles.scripted_agents import make_item
from tests.doubles.scripted_llm import ScriptedLLM

FIXTURE = Path(__file__).parent / "fixtures" / "amemgym_source"
CHECKOUT = Path(os.environ.get("MEMEVO_AMEMGYM_SOURCE", "/tmp/amemgym"))


def test_format_template_keeps_fields_and_unescapes_braces() -> None:
    assert format_template('{query}\n{{"answer": int}}\n{{}}') == '{query}\n{"answer": int}\n{}'


def test_prompts_are_read_from_the_fixture_checkout() -> None:
    prompts = load_amemgym_prompts(FIXTURE)
    item = make_item(n_periods=2)
    question = item.qas[0]
    qa = build_qa_prompt(question, prompts.questions)
    lines = "\n".join(f"{n}: {c.answer}" for n, c in enumerate(question.answer_choices, start=1))
    assert qa == f'{question.query}\nPick one of:\n{lines}\nReply as ```json\n{{"answer": int}}\n```\n'
    state = dict(zip(question.required_info, question.answer_choices[0].state, strict=True))
    assert f"Known state: {json.dumps(state, ensure_ascii=False, indent=2)}" in build_upper_bound_prompt(
        question, state, prompts.questions)
    probe = build_probe_prompt({"diet": ["vegan"]}, prompts.questions)
    assert probe.startswith('{\n  "diet": [\n    "vegan"\n  ]\n}\nName my') and '{"type": "value"}' in probe
    assert prompts.awi_answer == "Fixture AWI helper.\nNotes:\n{memories}"
    assert prompts.retrieved_answer == "Fixture retrieval helper.\nFound:\n{memories}"
    assert "{profile}" in prompts.simulator and "{state_schema}" in prompts.simulator
    awi = prompts.apply_to(MemoryPolicy(kind="awi"))
    assert awi.prompts["write_prompt"].endswith('Reply with a dict such as {"label": "value"} or {}.')
    assert prompts.apply_to(MemoryPolicy(kind="native")).prompts == {"system_prompt": ""}
    assert prompts.notes("awe") and not prompts.notes("awi")


def test_a_folder_that_is_not_a_checkout_is_a_clear_input_error(tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match="overall.py"):
        load_amemgym_prompts(tmp_path)
    (tmp_path / "src/amemgym/eval").mkdir(parents=True)
    (tmp_path / OVERALL_FILE).write_text("OTHER = 'x'\n")
    with pytest.raises(UserInputError, match="OVERALL_PROMPT"):
        load_amemgym_prompts(tmp_path)


def _constant(path: Path, name: str) -> str:
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == name:
            return node.value.value  # type: ignore[attr-defined, no-any-return]
    raise AssertionError(name)


@pytest.mark.skipif(not (CHECKOUT / OVERALL_FILE).exists(), reason="no AMemGym checkout (set MEMEVO_AMEMGYM_SOURCE)")
def test_rendered_prompts_equal_the_checkouts_own_format_calls() -> None:
    """Against a real checkout: what memevo sends is exactly what AMemGym's ``.format`` produced."""
    prompts = load_amemgym_prompts(CHECKOUT)
    question = make_item(n_periods=2).qas[0]
    choices = "\n".join(f"{n}: {c.answer}" for n, c in enumerate(question.answer_choices, start=1))
    overall = _constant(CHECKOUT / OVERALL_FILE, "OVERALL_PROMPT")
    assert build_qa_prompt(question, prompts.questions) == overall.format(query=question.query, choices=choices)
    state = dict(zip(question.required_info, question.answer_choices[1].state, strict=True))
    upper = _constant(CHECKOUT / UPPER_BOUND_FILE, "UTILIZATION_PROMPT")
    assert build_upper_bound_prompt(question, state, prompts.questions) == upper.format(
        query=question.query, state=json.dumps(state, ensure_ascii=False, indent=2), choices=choices)
    assert "{current_memories}" in prompts.awi_write and "{conversation}" in prompts.awi_write
    assert "{memories}" in prompts.awi_answer and "{context}" in prompts.simulator
    assert (CHECKOUT / SIMULATOR_FILE).exists()


async def test_simulator_dates_and_template_under_compat() -> None:
    item = make_item(n_periods=2)
    session = item.periods[1].sessions[0]
    now = datetime.strptime(session.session_time, "%Y-%m-%d %H:%M:%S")
    llm = ScriptedLLM(lambda messages, role, wants_json: "Tell me more, please.")
    ours = LLMUserSimulator(llm).prompt(item, session, [], now, 1)
    assert f"Current date: {session.session_time}" in ours[0]["content"]
    compat = LLMUserSimulator(llm, current_date="period_end").prompt(item, session, [], now, 1)
    assert f"Current date: {item.periods[1].period_end}\n" in compat[0]["content"]
    template = load_amemgym_prompts(FIXTURE).simulator
    simulator = LLMUserSimulator(llm, current_date="period_end", template=template)
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
                {"role": "user", "content": "more"}, {"role": "assistant", "content": "sure"}]
    [sent] = simulator.prompt(item, session, messages, now, 1)
    assert sent["role"] == "user" and f"Today: {item.periods[1].period_end}." in sent["content"]
    assert "Lately: User: more\nAssistant: sure\nSecret: {" in sent["content"]
    assert await simulator.follow_up(item, 1, session, messages, now) == "Tell me more, please."


async def test_compat_writes_ask_plain_json_mode_and_show_amemgym_rendering() -> None:
    llm = ScriptedLLM(lambda messages, role, wants_json: '{"diet": "vegan"}' if wants_json else "ok")
    now = datetime(2021, 1, 1)
    for compat in (False, True):
        agent = AWIAgent(MemoryPolicy(kind="awi", update_every=2, short_term=0, amemgym_compat=compat), llm)
        await agent.respond("I eat only plants", now)
        write = llm.calls[-1]
        assert write["json"] and (write["json_schema"] is None) == compat
        assert ('[\n  {\n    "role": "user"' in write["messages"][0]["content"]) == compat
    answer = await agent.answer("Q?", query="Q", now=now)
    assert answer.consulted_memory == "- diet: vegan"
    empty = AWIAgent(MemoryPolicy(kind="awi", amemgym_compat=True), llm)
    await empty.answer("Q?", query="Q", now=now, role="probe")
    assert llm.calls[-1]["role"] == "probe" and "(nothing stored yet)" not in llm.calls[-1]["messages"][0]["content"]
