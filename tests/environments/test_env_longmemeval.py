"""LongMemEval as an environment: records in its JSON format, date-ordered replay without evidence labels, and
judge scoring per question type with abstention reported apart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memevo.agents.llm.protocol import Message, Role
from memevo.core.errors import UserInputError
from memevo.environments.benchmarks.longmemeval import LongMemEvalEnvironment
from memevo.environments.cli import app
from memevo.environments.metrics import score_episodes
from memevo.environments.runner import EpisodeConfig
from memevo.environments.score_text import score_lines
from tests.doubles.replay_agents import ReplayRecordingAgent
from tests.doubles.scripted_llm import ScriptedLLM

runner = CliRunner()


def record(question_id: str, question_type: str, answer: Any = "Lisbon") -> dict[str, Any]:
    return {
        "question_id": question_id, "question_type": question_type,
        "question": "Where did I move to?", "answer": answer,
        "question_date": "2023/06/01 (Thu) 10:00",
        "haystack_session_ids": ["s_late", "answer_s_early"],
        "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/01 (Mon) 09:00"],  # unsorted, as in the oracle file
        "haystack_sessions": [
            [{"role": "user", "content": "Any tips for tiles?"}, {"role": "assistant", "content": "Use grout."}],
            [{"role": "user", "content": "I just moved to Lisbon.", "has_answer": True},
             {"role": "assistant", "content": "Welcome to Portugal!"}, {"role": "user", "content": "Thanks."}],
        ],
        "answer_session_ids": ["answer_s_early"],
    }


def write(tmp_path: Path, records: list[dict[str, Any]]) -> Path:
    path = tmp_path / "longmemeval_oracle.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def judge_by_keyword(messages: list[Message], role: Role, wants_json: bool) -> str:
    assert role == "judge"
    prompt = messages[-1]["content"]
    response = prompt.rsplit("Model response:", 1)[1]
    return "Yes." if "Lisbon" in response or "never" in response else "No"


def test_sessions_replay_in_date_order_without_evidence_labels(tmp_path: Path) -> None:
    (item,) = LongMemEvalEnvironment(EpisodeConfig()).load_items(write(tmp_path, [record("q1", "single-session-user")]))
    assert [s.id for s in item.sessions] == ["answer_s_early", "s_late"]
    assert item.sessions[0].exchanges() == [("I just moved to Lisbon.", "Welcome to Portugal!"), ("Thanks.", "")]
    assert "has_answer" not in item.model_dump_json()
    (question,) = item.questions
    assert question.asked_at is not None and (question.asked_at.month, question.asked_at.day) == (6, 1)
    assert question.scoring == "llm_judge" and question.category == "single-session-user"


async def test_judge_scores_with_the_rules_of_each_question_type(tmp_path: Path) -> None:
    llm = ScriptedLLM(judge_by_keyword)
    path = write(tmp_path, [record("q1", "single-session-user"), record("q2", "temporal-reasoning"),
                            record("q3_abs", "multi-session", answer="You never said where you moved.")])
    environment = LongMemEvalEnvironment(EpisodeConfig(), judge=llm)
    items = environment.load_items(path)
    replies = {"q1": "Lisbon", "q2": "Porto", "q3_abs": "You never told me."}
    episodes = [await environment.run_item(ReplayRecordingAgent(lambda p, m, q=item.id: replies[q]), item, None)
                for item in items]
    values = {episode.user_id: episode.periods[0].qa[0].value for episode in episodes}
    assert values == {"q1": 1.0, "q2": 0.0, "q3_abs": 1.0}
    scores = score_episodes(episodes, items)
    assert {c.category: c.accuracy for c in scores.per_category} == {
        "single-session-user": 1.0, "temporal-reasoning": 0.0, "multi-session": 1.0}
    assert scores.category_mean == pytest.approx(2 / 3)  # LongMemEval's task-averaged accuracy
    assert scores.abstention is not None and (scores.abstention.n_questions, scores.abstention.accuracy) == (1, 1.0)
    assert "task-averaged 0.667 (mean of 3 categories' scores), abstention 1.000 (1 q)" in " ".join(score_lines(scores))
    assert scores.score_meaning == "mean per-question credit: LLM judge on 3"
    prompts = [call["messages"][-1]["content"] for call in llm.calls_for("judge")]
    assert len(prompts) == 3 and "off-by-one" in prompts[1] and "cannot be answered" in prompts[2]
    assert "Correct answer: Lisbon" in prompts[0] and "Explanation: You never said" in prompts[2]


@pytest.mark.parametrize(("verdict", "credit"), [("yes", 1.0), ("Yes.", 1.0), ("The answer is yes.", 1.0),
                                                 ("**Yes**", 1.0), ("no", 0.0), ("No, it is not.", 0.0)])
async def test_the_judge_credits_a_reply_with_yes_anywhere_as_longmemeval_reads_it(tmp_path: Path, verdict: str,
                                                                                  credit: float) -> None:
    environment = LongMemEvalEnvironment(EpisodeConfig(), judge=ScriptedLLM(lambda messages, role, wants_json: verdict))
    (item,) = environment.load_items(write(tmp_path, [record("q1", "single-session-user")]))
    scored = await environment.score_answer(item, 0, environment.questions(item, 0)[0], "Lisbon")
    assert (scored.score, scored.detail) == (credit, verdict)


async def test_a_judged_item_is_refused_before_replay_without_a_judge(tmp_path: Path) -> None:
    environment = LongMemEvalEnvironment(EpisodeConfig())
    (item,) = environment.load_items(write(tmp_path, [record("q1", "knowledge-update")]))
    agent = ReplayRecordingAgent(lambda prompt, memory: "Lisbon")
    with pytest.raises(UserInputError, match="LLM judge") as caught:
        await environment.run_item(agent, item, None)
    assert caught.value.field == "llm.judge" and agent.ingested == []


def test_misaligned_haystack_names_file_and_record(tmp_path: Path) -> None:
    broken = record("q2", "multi-session")
    broken["haystack_dates"] = broken["haystack_dates"][:1]
    path = write(tmp_path, [record("q1", "multi-session"), broken])
    with pytest.raises(UserInputError, match="differ in length") as caught:
        LongMemEvalEnvironment(EpisodeConfig()).load_items(path)
    assert caught.value.source == str(path) and caught.value.field == "[1]"


def test_unknown_question_type_and_bad_date_name_their_fields(tmp_path: Path) -> None:
    environment = LongMemEvalEnvironment(EpisodeConfig())
    with pytest.raises(UserInputError) as caught:
        environment.load_items(write(tmp_path, [record("q1", "trivia")]))
    assert caught.value.field == "[0].question_type"
    bad_date = record("q1", "multi-session")
    bad_date["haystack_dates"][1] = "May 1st"
    with pytest.raises(UserInputError) as caught:
        environment.load_items(write(tmp_path, [bad_date]))
    assert caught.value.field == "[0].haystack_dates[1]"


def test_env_stats_reads_json_lines_too(tmp_path: Path) -> None:
    path = tmp_path / "longmemeval.jsonl"
    path.write_text("\n".join(json.dumps(record(f"q{i}", "multi-session")) for i in range(3)) + "\n",
                    encoding="utf-8")
    result = runner.invoke(app, ["stats", "-e", "longmemeval", "--json", str(path)])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert figures["items"] == 3 and figures["sessions"] == 6 and figures["exchanges"] == 9


def test_validate_warns_of_an_answer_session_missing_from_the_haystack(tmp_path: Path) -> None:
    odd = record("q1", "multi-session")
    odd["answer_session_ids"] = ["answer_s_gone"]
    path = write(tmp_path, [odd, record("q2_abs", "multi-session")])
    result = runner.invoke(app, ["validate", "-e", "longmemeval", str(path)])
    assert result.exit_code == 0
    assert "warning: q1: answer session 'answer_s_gone' is not in its haystack" in result.output
    assert "2 longmemeval items, 2 questions: 0 errors, 1 warnings" in result.output


async def test_exact_match_scoring_needs_no_judge_and_leaves_abstention_out(tmp_path: Path) -> None:
    environment = LongMemEvalEnvironment(EpisodeConfig(), scoring="exact_match")
    items = environment.load_items(write(tmp_path, [record("q1", "single-session-user"),
                                                    record("q2_abs", "multi-session")]))
    assert [item.id for item in items] == ["q1"]
    assert environment.load_warnings == ["1 abstention questions left out: exact match cannot score them"]
    episode = await environment.run_item(ReplayRecordingAgent(lambda prompt, memory: "Lisbon."), items[0], None)
    (answer,) = episode.periods[0].qa
    assert answer.scoring == "exact_match" and answer.value == 1.0
