"""MemoryAgentBench as an environment: its Hugging Face Parquet shards, context chunked into sessions, and each
task scored with the metric the benchmark reports for it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from memevo.agents.errors import UserInputError
from memevo.environments.benchmarks.judge import Judge
from memevo.environments.benchmarks.memoryagentbench import MemoryAgentBenchEnvironment, chunks
from memevo.environments.cli import app
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
    environment = MemoryAgentBenchEnvironment(path, chunk_chars=300)
    item = environment.items()[0]
    assert item.split == "Conflict_Resolution" and item.item_id == "factconsolidation_sh_6k/0"
    assert len(item.sessions) == len(chunks(FACTS, 300)) > 3
    replayed = " ".join(s.exchanges[0].user.split("\n", 1)[1] for s in item.sessions)
    assert replayed == FACTS
    assert all(len(s.exchanges[0].user.split("\n", 1)[1]) <= 300 for s in item.sessions)
    assert [q.question_id for q in item.questions] == ["factconsolidation_sh_6k/0/fc-0",
                                                      "factconsolidation_sh_6k/0/fc-1"]


def test_each_task_has_its_own_metric_and_unsupported_ones_say_what_they_need(tmp_path: Path) -> None:
    llm = ScriptedLLM(lambda messages, role, wants_json: "yes" if "Lisbon" in messages[-1]["content"]
                      .rsplit("Model response:", 1)[1] else "no")
    environment = MemoryAgentBenchEnvironment(write_parquet(tmp_path / "data", rows()), judge=Judge(llm))
    replies = {"What is the capital of Country1?": "It is City37 now.", "What is the capital of Country2?": "City 3",
               "Summarise the book.": "A summary.", "Where did I move?": "You moved to Lisbon."}
    scores = []
    for item in environment.items():
        agent = ReplayRecordingAgent(lambda prompt, memory: replies[prompt.split("\n\n")[0]])
        scores += asyncio.run(environment.run_item(agent, item))
    by_question = {score.question_id: score for score in scores}
    assert by_question["factconsolidation_sh_6k/0/fc-0"].value == 1.0  # substring exact match
    assert by_question["factconsolidation_sh_6k/0/fc-0"].metric == "substring exact match"
    assert by_question["factconsolidation_sh_6k/0/fc-1"].value == 0.0
    summary = by_question["infbench_sum_eng_shots2/1/0"]
    assert summary.value is None and "summary judge" in (summary.na_reason or "")
    assert by_question["longmemeval_s_-1_500/2/lme-1"].value == 1.0
    assert len(llm.calls_for("judge")) == 1
    table = environment.summarise(scores)
    assert table.by_category["factconsolidation_sh_6k"].mean == 0.5
    assert table.by_category["infbench_sum_eng_shots2"].mean is None
    assert table.overall.metric == "mixed"


def test_a_folder_of_shards_and_json_records_are_read_alike(tmp_path: Path) -> None:
    write_parquet(tmp_path / "data", rows()[:1])
    write_parquet(tmp_path / "data", rows()[1:2], name="Long_Range_Understanding")
    from_folder = MemoryAgentBenchEnvironment(tmp_path / "data").items()
    assert [item.split for item in from_folder] == ["Conflict_Resolution", "Long_Range_Understanding"]
    json_path = tmp_path / "records.json"
    json_path.write_text(json.dumps(rows()), encoding="utf-8")
    assert len(MemoryAgentBenchEnvironment(json_path).items()) == 3


def test_questions_and_answers_out_of_step_name_the_shard_and_row(tmp_path: Path) -> None:
    broken = rows()
    broken[1]["answers"] = [["one"], ["two"]]
    path = write_parquet(tmp_path / "data", broken)
    with pytest.raises(UserInputError, match="1 questions but 2 answer lists") as caught:
        MemoryAgentBenchEnvironment(path).items()
    assert caught.value.source == str(path) and caught.value.field == "[1]"


def test_env_stats_counts_questions_per_task(tmp_path: Path) -> None:
    path = write_parquet(tmp_path / "data", rows())
    result = runner.invoke(app, ["stats", "-e", "memoryagentbench", "--json", str(tmp_path / "data")])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.output)
    assert figures["questions_per_category"] == {"factconsolidation_sh_6k": 2, "infbench_sum_eng_shots2": 1,
                                                 "longmemeval_s_-1_500": 1}
    assert figures["items_per_split"] == {"Conflict_Resolution": 3}
    assert figures["data_bytes"] == path.stat().st_size
