"""The off-policy base: sessions ingested in order, questions scored per method and category, resumed per item."""

from __future__ import annotations

from pathlib import Path

import pytest

from memevo.core.errors import UserInputError
from memevo.environments.feedback import FeedbackConfig, FeedbackMode, render_feedback
from memevo.environments.item_run import ItemRun
from memevo.environments.metrics import score_episodes
from memevo.environments.replay import ReplayQuestion
from memevo.environments.runner import EpisodeConfig
from memevo.environments.store import RunStore
from tests.doubles.fact_agent import FactAgent
from tests.doubles.replay_environment import TinyReplayEnvironment, tiny_items
from tests.doubles.scripted_llm import ScriptedLLM

ENV = TinyReplayEnvironment(EpisodeConfig())


async def test_sessions_are_ingested_in_order_then_questions_scored_by_their_method() -> None:
    (item,) = tiny_items(1)
    agent = FactAgent()
    episode = await ENV.run_item(agent, item, None)
    assert [entry[:2] for entry in agent.ingested] == [
        ("my pet is dog0", "Nice."), ("my home is town0", ""), ("", "How are you?"), ("my home is city0", "Noted.")]
    assert agent.ended == ["2024-03-01 09:00:00", "2024-03-04 09:00:00"]
    (period,) = episode.periods
    by_index = {record.question_index: record for record in period.qa}
    assert by_index[0].scoring == "exact_match" and by_index[0].value == 1.0 and by_index[0].correct
    assert by_index[1].scoring == "token_f1" and by_index[1].value == pytest.approx(2 / 3)
    assert not by_index[1].correct and by_index[1].answer == "city0" and by_index[1].gold_answer == "the city0 area"
    assert by_index[2].scoring == "choice" and by_index[2].choice == 2 and by_index[2].gold == 2 and by_index[2].correct
    assert [record.category for record in period.qa] == ["single-hop", "temporal", "temporal"]


async def test_scores_average_credit_per_category_with_random_baseline_na() -> None:
    items = tiny_items(2)
    remembered = [await ENV.run_item(FactAgent(), item, None) for item in items]
    forgotten = [await ENV.run_item(FactAgent(forget=True), item, None) for item in items]
    scores = score_episodes(remembered, items)
    assert scores.accuracy == pytest.approx((1 + 2 / 3 + 1) / 3)
    assert scores.random_baseline is None and scores.memory_score is None
    assert scores.memory_na_reason == "no random baseline (free-text answers)"
    assert {c.category: round(c.accuracy, 3) for c in scores.per_category} == {"single-hop": 1.0, "temporal": 0.833}
    assert score_episodes(forgotten, items).accuracy == 0.0


async def test_a_killed_run_resumes_per_item_without_ingesting_finished_items_again(tmp_path: Path) -> None:
    items = tiny_items(2)
    store = RunStore(tmp_path / "run")
    first = await ENV.run_item(FactAgent(), items[0], None, ItemRun(store=store))
    with pytest.raises(RuntimeError, match="killed"):
        await ENV.run_item(FactAgent(crash_after=2), items[1], None, ItemRun(store=store))
    again = FactAgent(crash_after=0)  # would raise if it were made to ingest anything
    restored = await ENV.run_item(again, items[0], None, ItemRun(store=store))
    assert restored.periods[0].qa == first.periods[0].qa and again.facts == {"my pet": "dog0", "my home": "city0"}
    resumed = FactAgent()
    finished = await ENV.run_item(resumed, items[1], None, ItemRun(store=store))
    assert len(resumed.ingested) == 4 and finished.periods[0].qa[0].correct


async def test_judge_scores_under_its_role_and_is_required() -> None:
    (item,) = tiny_items(1)
    judged = item.model_copy(update={"questions": [ReplayQuestion(query="What is my pet?", gold="dog0",
                                                                  scoring="llm_judge")]})
    with pytest.raises(UserInputError, match="LLM judge"):
        await ENV.run_item(FactAgent(), judged, None)
    judge = ScriptedLLM(lambda messages, role, wants_json: "yes" if "dog0" in messages[-1]["content"] else "no")
    episode = await TinyReplayEnvironment(EpisodeConfig(), judge=judge).run_item(FactAgent(), judged, None)
    (record,) = episode.periods[0].qa
    assert record.value == 1.0 and record.scoring == "llm_judge"
    assert [call["role"] for call in judge.calls] == ["judge"]


async def test_a_simulator_or_recorded_run_is_refused() -> None:
    (item,) = tiny_items(1)
    with pytest.raises(UserInputError, match="replays its own sessions"):
        await ENV.run_item(FactAgent(), item, RunStore(Path("unused")))


async def test_question_only_evidence_shows_no_answer_gold_or_choice() -> None:
    (item,) = tiny_items(1)
    episode = await ENV.run_item(FactAgent(), item, None)
    feedback = ENV.feedback(episode.periods[0], item, FeedbackConfig(mode=FeedbackMode.question_only))
    text = render_feedback(feedback)
    assert "What is my pet?" in text and "Which is my home?" in text
    assert "the city0 area" not in text and "nowhere" not in text and "Assistant's answer" not in text
    complete = render_feedback(ENV.feedback(episode.periods[0], item,
                                            FeedbackConfig(mode=FeedbackMode.complete, with_ground_truth=True)))
    assert "Correct answer: the city0 area (answered wrongly)" in complete
    assert "(C) nowhere" in complete and "Correct answer: B (answered correctly)" in complete


def test_items_carry_the_benchmarks_own_split_and_categories() -> None:
    items = tiny_items(2)
    assert [ENV.item_split(item) for item in items] == ["train", "test"]
    assert ENV.categories(items[0]) == {0: "single-hop", 1: "temporal", 2: "temporal"}
