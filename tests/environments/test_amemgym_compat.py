"""AMemGym compatibility: prompt texts read from a checkout, compat mode reaching every part, and, against a
real checkout, memevo's requests equal to those of AMemGym's own evaluator (native, AWI, upper bound)."""

from __future__ import annotations

import ast
import hashlib
import json
import re
from datetime import datetime
from pathlib import Path

import pytest

from memevo.agents.amemgym_config import load_amemgym_agent_config
from memevo.agents.awi import AWIAgent
from memevo.agents.base import MemoryAgent
from memevo.agents.llm.protocol import Message, Role
from memevo.agents.policy import MemoryPolicy
from memevo.agents.registry import agent_class
from memevo.core.errors import UserInputError
from memevo.environments.amemgym.data.models import Item
from memevo.environments.amemgym.prompts import (
    OVERALL_FILE,
    SIMULATOR_FILE,
    UPPER_BOUND_FILE,
    format_template,
    load_amemgym_prompts,
)
from memevo.environments.amemgym.simulators.factory import make_simulator
from memevo.environments.amemgym.simulators.llm import LLMUserSimulator
from memevo.environments.diagnosis import build_probe_prompt
from memevo.environments.metrics import UpperBoundTable
from memevo.environments.qa import build_qa_prompt, build_upper_bound_prompt
from memevo.environments.records import EpisodeResult, PeriodResult
from memevo.environments.runner import AfterPeriod, EpisodeConfig, run_episode
from memevo.environments.table_cache import cached_table
from tests.doubles.amemgym_reference import CHECKOUT, NO_CHECKOUT, AMemGymReference, has_checkout, scripted_requests
from tests.doubles.scripted_agents import make_item
from tests.doubles.scripted_llm import ScriptedLLM

FIXTURE = Path(__file__).parents[1] / "fixtures" / "amemgym_source"
needs_checkout = pytest.mark.skipif(not has_checkout(), reason=NO_CHECKOUT)


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
        question, state, prompts.questions
    )
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


@needs_checkout
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
        query=question.query, state=json.dumps(state, ensure_ascii=False, indent=2), choices=choices
    )
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
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "more"},
        {"role": "assistant", "content": "sure"},
    ]
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


def reply_to(messages: list[Message], role: Role, wants_json: bool) -> str:
    """Replies that are a function of the request alone, so both evaluators get the same reply to the same
    request. A memory write sets one of three labels (existing labels keep being changed); a question gets an
    option drawn from everything in the request, so its score depends on what the agent remembered."""
    digest = int(hashlib.sha256(json.dumps(messages).encode()).hexdigest(), 16)
    if role == "user_simulator":
        return f"Interesting, tell me more ({digest % 97})."
    options = re.findall(r"^\d+: ", messages[-1]["content"], flags=re.MULTILINE)
    if options:
        return f'```json\n{{"answer": {digest % len(options) + 1}}}\n```'
    if wants_json:
        return json.dumps({f"topic{digest % 3}": f"note {digest % 1000}"})
    return f"Happy to help ({digest % 1000})."


async def memevo_episode(
    agent_file: Path, item: Item, llm: ScriptedLLM, reference: AMemGymReference, after_period: AfterPeriod | None = None
) -> EpisodeResult:
    """What ``memevo eval --agent <agent_file> --amemgym-compat --amemgym-source <checkout>`` runs for one item."""
    prompts = load_amemgym_prompts(CHECKOUT)
    policy = prompts.apply_to(load_amemgym_agent_config(agent_file, amemgym_compat=True))
    agent = agent_class(policy.kind)(policy, llm)  # as eval builds it: AMemGym's write prompt has no format clause
    simulator = make_simulator("llm", 0, llm, amemgym_compat=True, template=prompts.simulator)
    env = reference.env_config()
    config = EpisodeConfig(
        amemgym_compat=True,
        question_prompts=prompts.questions,
        rounds_init=env["num_rounds_init"],
        rounds_update=env["num_rounds_update"],
    )
    return await run_episode(agent, item, simulator, config, after_period=after_period)


@needs_checkout
@pytest.mark.parametrize("agent_file", ["native.json", "awi.json"])
async def test_agent_requests_equal_amemgym_evaluators_request_for_request(agent_file: str, tmp_path: Path) -> None:
    """The same item, agent config and replies: every request memevo sends (the agent's replies, memory writes
    and answers, the user simulator's follow-ups) equals AMemGym's, in order, and so does every score."""
    item, config = make_item(n_periods=4), CHECKOUT / "configs/agent" / agent_file
    reference = AMemGymReference(reply_to)
    theirs = reference.evaluate(item, config, tmp_path)
    llm = ScriptedLLM(reply_to)
    reordered: list[bool] = []  # per period, AWI: was a note changed in place and so shown out of list order?

    async def note_order(agent: MemoryAgent, result: PeriodResult) -> None:
        if isinstance(agent, AWIAgent):
            reordered.append(agent.notes != agent.shown_notes())

    episode = await memevo_episode(config, item, llm, reference, note_order)
    assert scripted_requests(llm.calls) == reference.requests
    assert [[float(record.correct) for record in period.qa] for period in episode.periods] == theirs
    assert 0 < sum(map(sum, theirs)) < len(item.periods) * len(item.qas)  # the answers are not all alike
    assert any(reordered) == (agent_file == "awi.json")  # so questions were asked with the two orders apart


@needs_checkout
async def test_upper_bound_asks_amemgym_requests_with_identical_scores(tmp_path: Path) -> None:
    """AMemGym asks the bare LLM once per answer choice of every question, and so does memevo under compat (its
    own mode asks only the gold states): the same requests, and the score of every (user, period, question) equal,
    looked up by the state alone as AMemGym does."""
    items = [make_item("user-1", n_periods=4), make_item("user-2", n_periods=4, seed=1)]
    reference = AMemGymReference(reply_to)
    theirs = reference.upper_bound(items, tmp_path / "amemgym")
    llm = ScriptedLLM(reply_to)
    prompts = load_amemgym_prompts(CHECKOUT)
    config = EpisodeConfig(amemgym_compat=True, question_prompts=prompts.questions)
    table = await cached_table(UpperBoundTable, llm, items, tmp_path / "upper_bound.json", config)  # as eval does
    ours = scripted_requests(llm.calls)
    assert len(set(ours)) == len(ours) and set(ours) == set(reference.requests)
    scores = [
        [
            [table.score(item, period, question) for question in range(len(item.qas))]
            for period in range(len(item.periods))
        ]
        for item in items
    ]
    assert scores == theirs
    assert 0 < sum(sum(map(sum, user)) for user in theirs) < sum(len(i.periods) * len(i.qas) for i in items)
