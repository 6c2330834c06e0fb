"""LongMemEval as an environment: records in its JSON format, date-ordered replay without evidence labels, and
judge scoring per question type with abstention reported apart."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memevo.agents.errors import UserInputError
from memevo.agents.llm.protocol import Message, Role
from memevo.environments.benchmarks.judge import Judge
from memevo.environments.benchmarks.longmemeval import LongMemEvalEnvironment
from memevo.environments.cli import app
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
    item = LongMemEvalEnvironment(write(tmp_path, [record("q1", "single-session-user")])).items()[0]
    assert [s.session_id for s in item.sessions] == ["answer_s_early", "s_late"]
    early = item.sessions[0].exchanges
    assert early[0].user == "I just moved to Lisbon." and early[0].assistant == "Welcome to Portugal!"
    assert early[1].user == "Thanks." and early[1].assistant == ""
    assert "has_answer" not in item.model_dump_json()
    assert item.questions[0].asked_at.day == 1 and item.questions[0].asked_at.month == 6
    assert "Lisbon" not in item.questions[0].model_dump_json()


def test_judge_scores_per_type_with_task_average_and_abstention(tmp_path: Path) -> None:
    llm = ScriptedLLM(judge_by_keyword)
    path = write(tmp_path, [record("q1", "single-session-user"), record("q2", "temporal-reasoning"),
                            record("q3_abs", "multi-session", answer="You never said where you moved.")])
    environment = LongMemEvalEnvironment(path, judge=Judge(llm))
    replies = {"q1": "Lisbon", "q2": "Porto", "q3_abs": "You never told me."}
    scores = []
    for item in environment.items():
        agent = ReplayRecordingAgent(lambda prompt, memory, qid=item.item_id: replies[qid])
        scores += asyncio.run(environment.run_item(agent, item))
    table = environment.summarise(scores)
    assert table.by_category["single-session-user"].mean == 1.0
    assert table.by_category["temporal-reasoning"].mean == 0.0
    assert table.overall.mean == pytest.approx(2 / 3)
    assert table.summaries["task-averaged"].mean == pytest.approx(2 / 3)
    assert table.summaries["abstention"].mean == 1.0 and table.summaries["abstention"].n == 1
    prompts = [call["messages"][-1]["content"] for call in llm.calls_for("judge")]
    assert "off-by-one" in prompts[1] and "cannot be answered" in prompts[2]


def test_without_a_judge_every_question_is_unscored_not_wrong(tmp_path: Path) -> None:
    environment = LongMemEvalEnvironment(write(tmp_path, [record("q1", "knowledge-update")]))
    item = environment.items()[0]
    score = asyncio.run(environment.score(item, item.questions[0], "Lisbon"))
    assert score.value is None and "judge" in (score.na_reason or "")
    table = environment.summarise([score])
    assert table.overall.mean is None and table.overall.text().startswith("n/a (needs the LLM judge")


def test_unreadable_verdict_stays_unscored(tmp_path: Path) -> None:
    environment = LongMemEvalEnvironment(write(tmp_path, [record("q1", "knowledge-update")]),
                                         judge=Judge(ScriptedLLM(lambda m, r, j: "Maybe?")))
    item = environment.items()[0]
    score = asyncio.run(environment.score(item, item.questions[0], "Lisbon"))
    assert score.value is None and score.na_reason == "judge reply said neither yes nor no"


def test_misaligned_haystack_names_file_and_record(tmp_path: Path) -> None:
    broken = record("q2", "multi-session")
    broken["haystack_dates"] = broken["haystack_dates"][:1]
    path = write(tmp_path, [record("q1", "multi-session"), broken])
    with pytest.raises(UserInputError, match="differ in length") as caught:
        LongMemEvalEnvironment(path).items()
    assert caught.value.source == str(path) and caught.value.field == "[1]"


def test_unknown_question_type_and_bad_date_name_their_fields(tmp_path: Path) -> None:
    with pytest.raises(UserInputError) as caught:
        LongMemEvalEnvironment(write(tmp_path, [record("q1", "trivia")])).items()
    assert caught.value.field == "[0].question_type"
    bad_date = record("q1", "multi-session")
    bad_date["haystack_dates"][1] = "May 1st"
    with pytest.raises(UserInputError) as caught:
        LongMemEvalEnvironment(write(tmp_path, [bad_date])).items()
    assert caught.value.field == "[0].haystack_dates[1]"


def test_env_stats_reads_json_lines_too(tmp_path: Path) -> None:
    path = tmp_path / "longmemeval.jsonl"
    path.write_text("\n".join(json.dumps(record(f"q{i}", "multi-session")) for i in range(3)) + "\n",
                    encoding="utf-8")
    result = runner.invoke(app, ["stats", "-e", "longmemeval", "--json", str(path)])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.output)
    assert figures["items"] == 3 and figures["sessions"] == 6 and figures["exchanges"] == 9


def test_validate_warns_of_an_answer_session_missing_from_the_haystack(tmp_path: Path) -> None:
    odd = record("q1", "multi-session")
    odd["answer_session_ids"] = ["answer_s_gone"]
    result = runner.invoke(app, ["validate", "-e", "longmemeval", str(write(tmp_path, [odd, record("q2_abs",
                                                                                                  "multi-session")]))])
    assert result.exit_code == 0
    assert "warning: q1: answer session 'answer_s_gone' is not in its haystack" in result.output
    assert "2 longmemeval items, 2 questions: 0 errors, 1 warnings" in result.output


def test_exact_match_scoring_is_labelled_as_not_the_judge_and_skips_abstention(tmp_path: Path) -> None:
    path = write(tmp_path, [record("q1", "single-session-user"), record("q2_abs", "multi-session")])
    environment = LongMemEvalEnvironment(path, scoring="exact_match")
    items = environment.items()
    scores = [asyncio.run(environment.score(item, item.questions[0], "Lisbon.")) for item in items]
    assert scores[0].value == 1.0 and scores[0].metric == "exact match (not LongMemEval's judge)"
    assert scores[1].value is None and scores[1].na_reason == "an abstention question needs the judge"
    table = environment.summarise(scores)
    assert table.summaries["abstention"].mean is None
