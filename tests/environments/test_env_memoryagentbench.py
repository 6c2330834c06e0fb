"""MemoryAgentBench as an environment: its Hugging Face Parquet shards, context chunked into sessions, and each
task scored with the metric the benchmark reports for it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from memevo.core.errors import UserInputError
from memevo.environments.benchmarks.memoryagentbench import MemoryAgentBenchEnvironment, chunks
from memevo.environments.cli import app
from memevo.environments.metrics import score_episodes
from memevo.environments.runner import EpisodeConfig
from tests.doubles.replay_agents import ReplayRecordingAgent
from tests.doubles.scripted_llm import ScriptedLLM

runner = CliRunner()
FACTS = " ".join(f"{n}. The capital of Country{n % 3} is City{n}." for n in range(40))


def metadata(source: str, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"source": source, "demo": None, "haystack_sessions": None, "keypoints": None,
                            "previous_events": None, "qa_pair_ids": None, "question_dates": None,
                            "question_ids": None, "question_types": None}
    return {**base, **fields}


def rows() -> list[dict[str, Any]]:
    return [
        {"context": FACTS, "questions": ["What is the capital of Country1?", "What is the capital of Country2?"],
         "answers": [["City37"], ["City38", "city 38"]],
         "metadata": metadata("factconsolidation_sh_6k", qa_pair_ids=["fc-0", "fc-1"])},
        {"context": FACTS, "questions": ["Summarise the book."], "answers": [["A long summary."]],
         "metadata": metadata("infbench_sum_eng_shots2", keypoints=["point"])},
        {"context": FACTS, "questions": ["Where did I move?"], "answers": [["Lisbon"]],
         "metadata": metadata("longmemeval_s_-1_500", question_ids=["lme-1"],
                              question_types=["single-session-user"])},
    ]


def write_parquet(folder: Path, records: list[dict[str, Any]], name: str = "Conflict_Resolution") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-00000-of-00001.parquet"
    pq.write_table(pa.Table.from_pylist(records), path)
    return path


def test_context_becomes_sentence_chunks_one_session_each(tmp_path: Path) -> None:
    path = write_parquet(tmp_path / "data", rows())
    item = MemoryAgentBenchEnvironment(EpisodeConfig(), chunk_chars=300).load_items(path)[0]
    assert item.split == "Conflict_Resolution" and item.id == "factconsolidation_sh_6k/0"
    assert len(item.sessions) == len(chunks(FACTS, 300)) > 3
    pieces = [session.exchanges()[0][0].split("\n", 1)[1] for session in item.sessions]
    assert " ".join(pieces) == FACTS and all(len(piece) <= 300 for piece in pieces)
    assert [q.gold for q in item.questions] == ["City37", "City38 / city 38"]


async def test_each_task_is_scored_with_its_metric_and_unscorable_ones_are_left_out(tmp_path: Path) -> None:
    llm = ScriptedLLM(lambda messages, role, wants_json: "yes" if "Lisbon" in messages[-1]["content"]
                      .rsplit("Model response:", 1)[1] else "no")
    environment = MemoryAgentBenchEnvironment(EpisodeConfig(), judge=llm)
    items = environment.load_items(write_parquet(tmp_path / "data", rows()))
    assert [item.id for item in items] == ["factconsolidation_sh_6k/0", "longmemeval_s_-1_500/2"]
    assert environment.load_warnings == [
        "record 1 (infbench_sum_eng_shots2) left out: its summary F1 needs MemoryAgentBench's three-call summary "
        "judge (fluency, key-point recall, precision)"]
    replies = {"What is the capital of Country1?": "It is City37 now.", "What is the capital of Country2?": "City 3",
               "Where did I move?": "You moved to Lisbon."}
    episodes = [await environment.run_item(ReplayRecordingAgent(lambda p, m: replies[p.split("\n\n")[0]]), item,
                                           None) for item in items]
    facts, moved = (episode.periods[0].qa for episode in episodes)
    assert [r.value for r in facts] == [1.0, 0.0] and facts[0].scoring == "substring_match"
    assert moved[0].value == 1.0 and moved[0].scoring == "llm_judge"
    assert len(llm.calls_for("judge")) == 1
    per_category = {c.category: c.accuracy for c in score_episodes(episodes, items).per_category}
    assert per_category == {"factconsolidation_sh_6k": 0.5, "longmemeval_s_-1_500": 1.0}


async def test_reference_scores_read_the_answer_line_and_any_gold(tmp_path: Path) -> None:
    environment = MemoryAgentBenchEnvironment(EpisodeConfig())
    item = environment.load_items(write_parquet(tmp_path / "data", rows()[:1]))[0]
    view = environment.questions(item, 0)[1]
    for reply, expected in [("Answer: city 38\nbecause", 1.0), ("City38", 1.0), ("City39", 0.0)]:
        score = await environment.score_answer(item, 0, view, reply)
        assert score.score == expected and score.detail == "substring exact match"


def test_a_folder_of_shards_and_json_records_are_read_alike(tmp_path: Path) -> None:
    write_parquet(tmp_path / "data", rows()[:1])
    write_parquet(tmp_path / "data", rows()[2:], name="Long_Range_Understanding")
    environment = MemoryAgentBenchEnvironment(EpisodeConfig())
    assert [item.split for item in environment.load_items(tmp_path / "data")] == [
        "Conflict_Resolution", "Long_Range_Understanding"]
    json_path = tmp_path / "records.json"
    json_path.write_text(json.dumps(rows()), encoding="utf-8")
    assert len(environment.load_items(json_path)) == 2


def test_questions_and_answers_out_of_step_name_the_shard_and_row(tmp_path: Path) -> None:
    broken = rows()
    broken[1]["answers"] = [["one"], ["two"]]
    path = write_parquet(tmp_path / "data", broken)
    with pytest.raises(UserInputError, match="1 questions but 2 answer lists") as caught:
        MemoryAgentBenchEnvironment(EpisodeConfig()).load_items(path)
    assert caught.value.source == str(path) and caught.value.field == "[1]"


def test_env_stats_and_validate_read_a_shard_folder(tmp_path: Path) -> None:
    path = write_parquet(tmp_path / "data", rows())
    result = runner.invoke(app, ["stats", "-e", "memoryagentbench", "--json", str(tmp_path / "data")])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert figures["questions_per_category"] == {"factconsolidation_sh_6k": 2, "longmemeval_s_-1_500": 1}
    assert figures["questions_per_scoring"] == {"substring_match": 2, "llm_judge": 1}
    assert figures["items_per_split"] == {"Conflict_Resolution": 2}
    assert figures["data_bytes"] == path.stat().st_size
    valid = runner.invoke(app, ["validate", "-e", "memoryagentbench", str(path)])
    assert valid.exit_code == 0 and "warning: record 1 (infbench_sum_eng_shots2) left out" in valid.output
