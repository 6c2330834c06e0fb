"""The Environment protocol's shared parts: the registry, the free-text scorers, and the evidence leak guarantee."""

from __future__ import annotations

from typing import get_args

import pytest

from memevo.core.errors import UserInputError
from memevo.environments.answer_scores import exact_match, judge_answer, judge_verdict, normalize_answer, token_f1
from memevo.environments.feedback import FeedbackConfig, FeedbackMode, PeriodFeedback, render_feedback
from memevo.environments.protocol import QuestionView, feedback_record
from memevo.environments.records import PeriodResult, QARecord, remember
from memevo.environments.registry import (
    DEFAULT_ENVIRONMENT,
    ENVIRONMENTS,
    EnvironmentName,
    capabilities_of,
    environment_class,
    environments_with,
    parse_options,
)
from tests.doubles.scripted_llm import ScriptedLLM


def test_registry_lists_the_config_names() -> None:
    assert set(get_args(EnvironmentName)) == set(ENVIRONMENTS)


def test_every_environment_declares_its_capabilities_and_only_amemgym_has_memory_figures() -> None:
    for name in ENVIRONMENTS:
        declared = capabilities_of(name)
        assert declared is environment_class(name).capabilities
        assert declared.memory_figures == (name == DEFAULT_ENVIRONMENT)
        assert declared.sessions == ("on_policy" if name == DEFAULT_ENVIRONMENT else "off_policy")
    assert environments_with(lambda capabilities: capabilities.upper_bound) == "amemgym"
    assert environments_with(lambda capabilities: "dialog_field" in capabilities.options) == "memorybench"


def test_environment_options_are_name_value_words() -> None:
    assert parse_options(["a=1", "b=x=y", "c="], field="--env-option") == {"a": "1", "b": "x=y", "c": ""}
    with pytest.raises(UserInputError, match="'dialog_field' is not NAME=VALUE") as caught:
        parse_options(["dialog_field"], field="--env-option")
    assert caught.value.field == "--env-option"


def test_unknown_environment_is_a_user_error_naming_the_field() -> None:
    with pytest.raises(UserInputError, match="unknown environment 'locomoo'") as caught:
        environment_class("locomoo", field="test_environment")
    assert caught.value.field == "test_environment"


def test_normalisation_and_text_scores() -> None:
    assert normalize_answer("The  Red, car!") == "red car"
    assert exact_match("the red car.", "Red car") == 1.0
    assert exact_match("a red bike", "red car") == 0.0
    assert token_f1("red car", "red car") == 1.0
    assert token_f1("blue bike", "red car") == 0.0
    assert token_f1("red bike", "red car") == pytest.approx(0.5)
    assert token_f1("", "") == 1.0
    assert token_f1("", "red") == 0.0


def test_judge_verdicts() -> None:
    assert judge_verdict("Yes.") == 1.0
    assert judge_verdict("no, it differs") == 0.0
    assert judge_verdict("maybe") is None


async def test_judge_asks_under_its_own_role() -> None:
    llm = ScriptedLLM(lambda messages, role, wants_json: "yes" if "Paris" in messages[-1]["content"] else "no")
    assert await judge_answer(llm, "Where?", "Paris", "in Paris") == (1.0, "yes")
    assert (await judge_answer(llm, "Where?", "Rome", "in Lyon"))[0] == 0.0
    assert {call["role"] for call in llm.calls} == {"judge"}


def _free_text_period() -> tuple[PeriodResult, QuestionView]:
    view = QuestionView(index=0, query="Where did Ana move?", category="single-hop", gold="Lisbon")
    memories: dict[str, str] = {}
    record = QARecord(user_id="u", period=0, question_index=0, prompt="p", raw_reply="Porto", choice=None, gold=None,
                      n_choices=0, correct=False, scoring="token_f1", score=0.0, answer="Porto", gold_answer="Lisbon",
                      category="single-hop", memory_id=remember(memories, "Ana lives in Porto"))
    return PeriodResult(user_id="u", period=0, qa=[record], memories=memories), view


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_question_only_free_text_feedback_carries_no_answer_or_gold(fmt: str) -> None:
    result, view = _free_text_period()
    record = feedback_record(result.qa[0], view, FeedbackConfig(mode=FeedbackMode.question_only), 0)
    feedback = PeriodFeedback(user_id="u", period=0, mode=FeedbackMode.question_only, records=[record], memories=[])
    text = render_feedback(feedback, fmt)  # type: ignore[arg-type]
    assert "Where did Ana move?" in text
    assert "Lisbon" not in text and "Porto" not in text
    assert record.agent_choice is None and record.ground_truth is None and record.correct is None


def test_complete_free_text_feedback_shows_gold_only_with_ground_truth() -> None:
    result, view = _free_text_period()
    plain = feedback_record(result.qa[0], view, FeedbackConfig(mode=FeedbackMode.complete), 0)
    assert plain.agent_choice == "Porto" and plain.ground_truth is None and plain.correct is None
    told = feedback_record(result.qa[0], view, FeedbackConfig(mode=FeedbackMode.complete, with_ground_truth=True), 0)
    assert told.ground_truth == "Lisbon" and told.correct is False


def test_record_value_is_the_free_text_score_or_the_choice_outcome() -> None:
    result, _ = _free_text_period()
    assert result.qa[0].model_copy(update={"score": 0.4}).value == 0.4
    choice = QARecord(user_id="u", period=0, question_index=0, prompt="p", raw_reply="1", choice=1, gold=1,
                      n_choices=3, correct=True)
    assert choice.value == 1.0 and choice.scoring == "choice"
