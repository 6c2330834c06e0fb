"""Feedback records in each mode; letters right, the reference's off-by-one behind its flag."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from memevo.environments.feedback import FeedbackConfig, FeedbackMode, build_feedback, letter, render_feedback
from memevo.environments.records import PeriodResult, QARecord, remember
from tests.doubles.scripted_agents import make_item

ITEM = make_item(n_periods=2)


def period_result(choices: list[int | None], memory: str = "remembered: likes tea") -> PeriodResult:
    records, memories = [], {}
    for index, choice in enumerate(choices):
        gold = ITEM.qas[index].gold_index(ITEM.periods[1].state) + 1
        records.append(QARecord(user_id=ITEM.id, period=1, question_index=index, prompt="p", raw_reply="r",
                                choice=choice, gold=gold, n_choices=4, correct=choice == gold,
                                format_error=choice is None, memory_id=remember(memories, memory)))
    return PeriodResult(user_id=ITEM.id, period=1, qa=records, memories=memories)


def test_letters() -> None:
    assert [letter(i) for i in (0, 1, 25, 26, 27)] == ["A", "B", "Z", "AA", "AB"]


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_question_only_has_no_choices_answer_or_state(fmt: str) -> None:
    feedback = build_feedback(period_result([1, 2, 3, 4]), ITEM, FeedbackConfig(mode=FeedbackMode.question_only))
    text = render_feedback(feedback, fmt)  # type: ignore[arg-type]
    assert all(q.query in text for q in ITEM.qas)
    assert "remembered: likes tea" in text
    for question in ITEM.qas:
        for choice in question.answer_choices:
            assert choice.answer not in text
    for value in ITEM.periods[1].state.values():
        assert value not in text
    assert "(A)" not in text and "answer" not in text.lower().replace("answer_choices", "")
    assert all(r.choices is None and r.agent_choice is None and r.ground_truth is None for r in feedback.records)


def test_complete_mode_letters_and_ground_truth() -> None:
    result = period_result([1, 4, None, 2])
    config = FeedbackConfig(mode=FeedbackMode.complete, with_ground_truth=True)
    feedback = build_feedback(result, ITEM, config)
    assert [r.agent_choice for r in feedback.records] == ["A", "D", "none (unreadable reply)", "B"]
    assert [r.ground_truth for r in feedback.records] == [letter(qa.gold - 1) for qa in result.qa]
    first = feedback.records[0]
    assert first.choices == [f"({letter(i)}) {c.answer}" for i, c in enumerate(ITEM.qas[0].answer_choices)]
    text = render_feedback(feedback)
    assert "Assistant's answer: A" in text and "Correct answer:" in text and "(D) " in text


def test_reference_off_by_one_is_reproducible_behind_the_flag() -> None:
    feedback = build_feedback(period_result([1, 4, 2, 3]), ITEM, FeedbackConfig(amemgym_letter_bug=True))
    # choice 1 shows as "B"; the last of 4 choices maps to "E", a letter with no option
    assert [r.agent_choice for r in feedback.records] == ["B", "E", "C", "D"]


def test_consulted_memory_is_stored_once() -> None:
    feedback = build_feedback(period_result([1, 2, 3, 4]), ITEM, FeedbackConfig())
    assert feedback.memories == ["remembered: likes tea"]
    assert {r.memory_ref for r in feedback.records} == {0}
    assert render_feedback(feedback).count("remembered: likes tea") == 1


def test_exposed_state_updates_and_mode_none() -> None:
    config = FeedbackConfig(mode=FeedbackMode.question_only, with_exposed_states=True)
    feedback = build_feedback(period_result([1]), ITEM, config)
    assert feedback.exposed_state_updates == {k: v.new for k, v in ITEM.periods[1].updates.items()}
    assert "User information updates" in render_feedback(feedback)
    none = build_feedback(period_result([1]), ITEM, FeedbackConfig(mode=FeedbackMode.none, with_exposed_states=True))
    assert none.records == [] and none.exposed_state_updates is None
    assert render_feedback(none) == "No feedback."
    assert json.loads(render_feedback(none, "json"))["records"] == []


def test_ground_truth_requires_complete_mode() -> None:
    with pytest.raises(ValidationError, match="with_ground_truth"):
        FeedbackConfig(mode=FeedbackMode.question_only, with_ground_truth=True)
