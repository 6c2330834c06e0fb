"""LoCoMo as an environment: a small file in locomo10.json's format, replayed and scored as LoCoMo scores."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memevo.agents.errors import UserInputError
from memevo.environments.benchmarks.locomo import NOT_MENTIONED, LocomoEnvironment
from memevo.environments.cli import app
from tests.doubles.replay_agents import ReplayRecordingAgent

runner = CliRunner()


def sample() -> dict[str, Any]:
    return {
        "sample_id": "conv-1",
        "conversation": {
            "speaker_a": "Ana", "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a dog called Rex."},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "Lovely! Look at this.", "blip_caption": "a red kite",
                 "img_url": ["http://example.invalid/kite.jpg"], "query": "kite"},
                {"speaker": "Ana", "dia_id": "D1:3", "text": "I also paint sunsets and mountains."},
            ],
            "session_2_date_time": "10:00 am on 9 June, 2023",
            "session_2": [{"speaker": "Ben", "dia_id": "D2:1", "text": "I moved to Lisbon."},
                          {"speaker": "Ana", "dia_id": "D2:2", "text": "Great news."}],
            "session_3_date_time": "9:00 am on 1 July, 2023",  # a date without its session, as in locomo10
        },
        "qa": [
            {"question": "What is Ana's dog called?", "answer": "Rex", "evidence": ["D1:1"], "category": 4},
            {"question": "What does Ana paint?", "answer": "sunsets, mountains", "evidence": ["D1:3"], "category": 1},
            {"question": "When did Ben move?", "answer": 2023, "evidence": ["D2:1"], "category": 2},
            {"question": "What might Ben enjoy?", "answer": "kites; flying", "evidence": ["D1:2"], "category": 3},
            {"question": "What is Ben's cat called?", "adversarial_answer": "Rex", "evidence": ["D1:1"],
             "category": 5},
        ],
        "event_summary": {}, "observation": {}, "session_summary": {},
    }


def write(tmp_path: Path, samples: list[dict[str, Any]]) -> Path:
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps(samples, indent=2), encoding="utf-8")
    return path


def test_sessions_replay_in_order_with_speakers_and_shared_images(tmp_path: Path) -> None:
    item = LocomoEnvironment(write(tmp_path, [sample()])).items()[0]
    assert [s.session_id for s in item.sessions] == ["conv-1/session_1", "conv-1/session_2"]
    first = item.sessions[0].exchanges
    assert first[0].user == "Ana: I adopted a dog called Rex."
    assert first[0].assistant == "Ben: Lovely! Look at this. [shares a red kite]"
    assert first[1].user == "Ana: I also paint sunsets and mountains." and first[1].assistant == ""
    assert item.sessions[1].when.month == 6
    assert all(q.asked_at == item.sessions[1].when for q in item.questions)


def test_questions_never_carry_the_gold_answer_and_adversarial_shows_both_options(tmp_path: Path) -> None:
    item = LocomoEnvironment(write(tmp_path, [sample()])).items()[0]
    texts = [q.model_dump_json() for q in item.questions[:2]]
    assert not any("Rex" in text for text in texts[:1]) and "sunsets, mountains" not in texts[1]
    adversarial = item.questions[4]
    assert adversarial.category == "adversarial"
    assert NOT_MENTIONED in adversarial.prompt and "Rex" in adversarial.prompt


@pytest.mark.parametrize(("index", "reply", "expected"), [
    (0, "Rex", 1.0),
    (0, "The dog is called Rex", 2 * (1 / 4) * 1 / (1 / 4 + 1)),
    (1, "mountains", 0.5),  # multi-hop: mean over gold parts of the best part match
    (3, "kites", 1.0),  # open-domain: scored against the gold text before ';'
    (4, "Not mentioned in the conversation", 1.0),
    (4, "Rex", 0.0),
])
def test_reply_scores_follow_locomo(tmp_path: Path, index: int, reply: str, expected: float) -> None:
    environment = LocomoEnvironment(write(tmp_path, [sample()]))
    item = environment.items()[0]
    score = asyncio.run(environment.score(item, item.questions[index], reply))
    assert score.value == pytest.approx(expected)


def test_one_letter_adversarial_reply_means_the_option_it_names(tmp_path: Path) -> None:
    environment = LocomoEnvironment(write(tmp_path, [sample()]))
    item = environment.items()[0]
    question = item.questions[4]
    letter_for_not_mentioned = "a" if question.prompt.index(NOT_MENTIONED) < question.prompt.index("Rex") else "b"
    other = "b" if letter_for_not_mentioned == "a" else "a"
    assert asyncio.run(environment.score(item, question, letter_for_not_mentioned)).value == 1.0
    assert asyncio.run(environment.score(item, question, other)).value == 0.0


def test_run_item_replays_then_scores_per_category(tmp_path: Path) -> None:
    environment = LocomoEnvironment(write(tmp_path, [sample()]))
    item = environment.items()[0]
    agent = ReplayRecordingAgent(lambda prompt, memory: "Rex" if "dog" in prompt and "Rex" in memory else "no idea")
    scores = asyncio.run(environment.run_item(agent, item))
    assert len(agent.ingested) == 3 and len(agent.session_ends) == 2
    assert agent.ingested[-1][2] == item.sessions[1].when
    table = environment.summarise(scores)
    assert list(table.by_category) == ["multi-hop", "temporal", "open-domain", "single-hop", "adversarial"]
    assert table.by_category["single-hop"].mean == 1.0
    assert table.by_category["adversarial"].mean == 0.0
    assert table.overall.n == 5


def test_bad_turn_names_file_and_field(tmp_path: Path) -> None:
    broken = sample()
    del broken["conversation"]["session_2"][1]["text"]
    path = write(tmp_path, [sample(), broken])
    with pytest.raises(UserInputError) as caught:
        LocomoEnvironment(path).items()
    assert caught.value.source == str(path)
    assert caught.value.field == "[1].conversation.session_2[1].text"


def test_adversarial_question_without_its_answer_is_an_error(tmp_path: Path) -> None:
    broken = sample()
    del broken["qa"][4]["adversarial_answer"]
    with pytest.raises(UserInputError, match="adversarial_answer") as caught:
        LocomoEnvironment(write(tmp_path, [broken])).items()
    assert caught.value.field == "[0].qa[4]"


def test_env_stats_and_validate_read_locomo(tmp_path: Path) -> None:
    path = write(tmp_path, [sample()])
    stats = runner.invoke(app, ["stats", "--environment", "locomo", "--json", str(path)])
    assert stats.exit_code == 0, stats.output
    figures = json.loads(stats.output)
    assert figures["sessions"] == 2 and figures["exchanges"] == 3 and figures["questions"] == 5
    assert figures["questions_per_category"]["adversarial"] == 1
    valid = runner.invoke(app, ["validate", "-e", "locomo", str(path)])
    assert valid.exit_code == 0 and "1 locomo items, 5 questions: 0 errors" in valid.output


def test_env_validate_of_a_broken_file_fails_with_the_field(tmp_path: Path) -> None:
    broken = sample()
    broken["conversation"]["session_1_date_time"] = "yesterday"
    path = write(tmp_path, [broken])
    result = runner.invoke(app, ["validate", "-e", "locomo", str(path)])
    assert isinstance(result.exception, UserInputError)
    assert str(result.exception).startswith(f"{path}, field '[0].conversation.session_1_date_time'")


def test_validate_warns_of_evidence_that_names_no_turn(tmp_path: Path) -> None:
    odd = sample()
    odd["qa"][0]["evidence"] = ["D1:1 D1:3"]  # two ids in one string, as a few locomo10 questions have
    result = runner.invoke(app, ["validate", "-e", "locomo", str(write(tmp_path, [odd]))])
    assert result.exit_code == 0
    assert "warning: conv-1 question 0: evidence 'D1:1 D1:3' names no turn" in result.output
    assert "0 errors, 1 warnings" in result.output
