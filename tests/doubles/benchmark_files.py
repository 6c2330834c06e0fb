"""TEST DOUBLE: small files in each replayed benchmark's real format (LoCoMo's locomo10.json, LongMemEval's
longmemeval_s.json, MemoryAgentBench's Parquet shard, MemoryBench's dataset snapshot), written into a folder.

Sizes are arguments, so the environment benchmark writes bigger ones than the tests that run the shipped
experiment configs end to end; the data itself is filler about a move to Lisbon, enough to be read and scored.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FILLER = "We talked about the weather, the garden and a film we both liked last week."


def write_locomo(folder: Path, items: int, questions: int, *, sessions: int = 5) -> Path:
    samples = []
    for number in range(items):
        conversation: dict[str, Any] = {"speaker_a": "Ana", "speaker_b": "Ben"}
        for session in range(1, sessions + 1):
            conversation[f"session_{session}_date_time"] = f"1:56 pm on {session} May, 2023"
            conversation[f"session_{session}"] = [
                {"speaker": "Ana" if turn % 2 == 0 else "Ben", "dia_id": f"D{session}:{turn + 1}",
                 "text": f"{FILLER} ({number}.{session}.{turn})"} for turn in range(10)]
        qa = [{"question": f"What did Ana say in session {q % sessions + 1}?", "answer": "the weather",
               "evidence": [f"D{q % sessions + 1}:1"], "category": q % 4 + 1} for q in range(questions - 1)]
        qa.append({"question": "What is Ben's cat called?", "adversarial_answer": "Rex", "evidence": ["D1:1"],
                   "category": 5})
        samples.append({"sample_id": f"conv-{number}", "conversation": conversation, "qa": qa})
    path = folder / "locomo10.json"
    path.write_text(json.dumps(samples), encoding="utf-8")
    return path


def write_longmemeval(folder: Path, items: int, questions: int) -> Path:
    types = ["single-session-user", "multi-session", "temporal-reasoning", "knowledge-update"]
    records = []
    for number in range(items * questions):
        sessions = [[{"role": "user", "content": f"{FILLER} ({number}.{s}.{t})"},
                     {"role": "assistant", "content": "That sounds nice."}] for s in range(6) for t in range(1)]
        records.append({
            "question_id": f"q{number}" + ("_abs" if number % 5 == 4 else ""), "question_type": types[number % 4],
            "question": "Where did I move?", "answer": "Lisbon", "question_date": "2023/06/01 (Thu) 10:00",
            "haystack_session_ids": [f"s{number}.{s}" for s in range(6)],
            "haystack_dates": [f"2023/05/{s + 10:02d} (Sat) 09:00" for s in range(6)],
            "haystack_sessions": sessions, "answer_session_ids": [f"s{number}.0"]})
    path = folder / "longmemeval_s.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def write_memoryagentbench(folder: Path, items: int, questions: int, *, facts: int = 600) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    context = " ".join(f"Fact {n}: {FILLER}" for n in range(facts))
    sources = ["factconsolidation_sh_6k", "longmemeval_s_-1_500", "ruler_qa1_197k"]
    rows = [{"context": context, "questions": [f"What is fact {q}?" for q in range(questions)],
             "answers": [[f"fact {q}"] for q in range(questions)],
             "metadata": {"source": sources[number % 3], "question_types": ["multi-session"] * questions,
                          "question_ids": [f"m{number}.{q}" for q in range(questions)]}} for number in range(items)]
    path = folder / "Accurate_Retrieval-00000-of-00001.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def write_memorybench(folder: Path, items: int, questions: int, *, train: int = 10) -> Path:
    import datasets

    datasets.disable_progress_bars()

    def record(index: int, name: str) -> dict[str, Any]:
        dialog = [{"role": "user", "content": f"Question {index}: {FILLER}"}, {"role": "assistant", "content": "OK."},
                  {"role": "user", "content": "Please be more specific."}, {"role": "assistant", "content": "Sure."}]
        feedback = [{"round": 1, "implicit_action": "dislike", "terminated": False}]
        return {"test_idx": index, "input_prompt": f"Question {index}: why is the sky blue?", "dataset_name": name,
                "lang": "en", "info": json.dumps({"golden_answer": "scattering"}), "dialog": json.dumps(dialog),
                "implicit_feedback": json.dumps(feedback)}

    root = folder / "MemoryBench"
    for number in range(items):
        name = "NFCats" if number == 0 else f"DialSim-set{number}"
        splits = {"train": [record(i, name) for i in range(train)],
                  "test": [record(train + i, name) for i in range(questions)]}
        for split, records in splits.items():
            datasets.Dataset.from_list(records).save_to_disk(str(root / "dataset" / name / split))
    return root


WRITERS = {"locomo": write_locomo, "longmemeval": write_longmemeval, "memoryagentbench": write_memoryagentbench,
           "memorybench": write_memorybench}
