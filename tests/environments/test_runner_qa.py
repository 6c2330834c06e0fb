"""The QA prompt, the strict parser, the retry and the compat random fallback."""

from __future__ import annotations

import pytest

from memevo.agents.base import AgentAnswer
from memevo.environments.diagnosis import build_probe_prompt, parse_probe
from memevo.environments.qa import ask_choice, build_qa_prompt, build_upper_bound_prompt, parse_choice
from tests.doubles.scripted_agents import make_item


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"answer": 2}', 2),
        ('```json\n{"answer": 3}\n```', 3),
        ('```\n{"answer": 1}\n```', 1),
        ('I would pick this one: {"answer": 4} because it fits.', 4),
        ('Sure!\n```json\n{"answer": 2}\n```\nHope that helps.', 2),
        ('{"answer": 0}', None),
        ('{"answer": -1}', None),
        ('{"answer": 5}', None),
        ('{"answer": "2"}', None),
        ('{"answer": 2.0}', None),
        ('{"answer": true}', None),
        ('{"choice": 2}', None),
        ("2", None),
        ("The second option.", None),
        ("[1, 2]", None),
    ],
)
def test_parse_choice_is_strict(text: str, expected: int | None) -> None:
    assert parse_choice(text, 4) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"answer": 3}', 3),
        ('```json\n{"answer": 2}\n```', 2),
        ('Sure!\n```json\n{"answer": 2}\n```\nHope that helps.', 2),
        ('I pick {"answer": 2}.', None),  # the reference read only a ```json block or the whole text
        ('```\n{"answer": 2}\n```', None),
        ('{"answer": 0}', None),
    ],
)
def test_parse_choice_reads_as_the_reference_under_compat(text: str, expected: int | None) -> None:
    assert parse_choice(text, 4, amemgym_compat=True) == expected


def test_qa_prompt_lists_question_then_numbered_choices_then_json_instruction() -> None:
    question = make_item().qas[0]
    prompt = build_qa_prompt(question)
    assert prompt.startswith(question.query)
    positions = [prompt.index(f"{i}: {c.answer}") for i, c in enumerate(question.answer_choices, start=1)]
    assert positions == sorted(positions)
    assert prompt.index("current situation") < positions[0]
    assert prompt.rstrip().endswith("fenced block.") and '{"answer"' in prompt


def test_upper_bound_prompt_carries_the_state_as_json() -> None:
    question = make_item().qas[0]
    prompt = build_upper_bound_prompt(question, {"diet": "vegan", "budget": "frugal"})
    assert '"diet": "vegan"' in prompt and "1: " in prompt


class Replies:
    """An ``ask`` function replaying canned texts and recording prompts."""

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.prompts: list[str] = []

    async def __call__(self, prompt: str) -> AgentAnswer:
        self.prompts.append(prompt)
        return AgentAnswer(text=self.texts.pop(0), consulted_memory=f"memory {len(self.prompts)}")


async def test_valid_first_reply_asks_once() -> None:
    ask = Replies('{"answer": 3}')
    outcome = await ask_choice(ask, "Q", 4)
    assert (outcome.choice, outcome.format_error, outcome.retry_reply) == (3, False, None)
    assert len(ask.prompts) == 1


async def test_unreadable_reply_is_retried_once_with_a_reminder() -> None:
    ask = Replies("option two", '{"answer": 2}')
    outcome = await ask_choice(ask, "Q", 4)
    assert outcome.choice == 2 and not outcome.format_error
    assert outcome.raw_reply == "option two" and outcome.retry_reply == '{"answer": 2}'
    assert ask.prompts[1].startswith("Q") and "1 to 4" in ask.prompts[1]
    assert outcome.consulted_memory == "memory 2"


async def test_two_unreadable_replies_are_a_format_error_without_a_choice() -> None:
    outcome = await ask_choice(Replies('{"answer": 0}', '{"answer": 9}'), "Q", 4)
    assert outcome.choice is None and outcome.format_error and not outcome.random_fallback


async def test_compat_fallback_is_random_seeded_per_key_and_not_retried() -> None:
    draws = []
    for _ in range(2):
        ask = Replies("garbage")
        outcome = await ask_choice(ask, "Q", 4, amemgym_compat=True, rng_key=(0, "u", 3, 1))
        assert outcome.random_fallback and outcome.format_error and len(ask.prompts) == 1
        draws.append(outcome.choice)
    assert draws[0] == draws[1] and 1 <= draws[0] <= 4
    keys = [(0, "u", period, question) for period in range(6) for question in range(5)]
    spread = {(await ask_choice(Replies("x"), "Q", 4, amemgym_compat=True, rng_key=key)).choice for key in keys}
    assert spread == {1, 2, 3, 4}


def test_probe_prompt_and_parser() -> None:
    prompt = build_probe_prompt({"diet": ["vegan", "omnivore"]})
    assert '"diet"' in prompt and "omnivore" in prompt
    # a present non-string value was read (and is wrong); an absent key is left out (unread)
    assert parse_probe('```json\n{"diet": "vegan", "pet": 3}\n```', ["diet", "pet", "city"]) == {
        "diet": "vegan", "pet": None,
    }
    assert parse_probe("no idea", ["diet"]) is None


async def test_probe_retries_once_then_counts_a_format_error() -> None:
    from datetime import datetime

    from memevo.environments.diagnosis import run_probe
    from tests.doubles.scripted_agents import OracleAgent, UnreadableAgent

    item = make_item()
    now = datetime(2021, 1, 1, 23, 59, 59)
    agent = UnreadableAgent(item)
    record = await run_probe(agent, item, 1, 0, user_id="u", now=now)
    assert record.format_error and not any(record.correct.values()) and len(agent.answer_calls) == 2
    assert agent.answer_calls[0]["query"].startswith(item.qas[0].query)  # bare question, not the prompt
    good = await run_probe(OracleAgent(item), item, 1, 0, user_id="u", now=now)
    assert all(good.correct.values()) and not good.format_error
    assert good.truth == {k: item.periods[1].state[k] for k in item.qas[0].required_info}


async def test_probe_is_booked_as_probe_and_not_retried_under_amemgym_compat() -> None:
    from datetime import datetime

    from memevo.environments.diagnosis import run_probe
    from tests.doubles.scripted_agents import UnreadableAgent

    item = make_item()
    agent = UnreadableAgent(item)
    record = await run_probe(agent, item, 1, 0, user_id="u", now=datetime(2021, 1, 1), amemgym_compat=True)
    assert len(agent.answer_calls) == 1 and agent.answer_calls[0]["role"] == "probe"
    assert record.format_error and record.unread == item.qas[0].required_info
