"""MemoryAgentBench (HUST-AI-HYZ/MemoryAgentBench; Hugging Face ``ai-hyz/MemoryAgentBench``, not shipped) as an
environment.

A record is one long ``context`` with ``questions``, their acceptable ``answers`` (a list per question) and
``metadata`` whose ``source`` names the task (``ruler_qa1_197k``, ``eventqa_full``, ``icl_banking77_...``,
``factconsolidation_sh_6k``, ``longmemeval_s_...``, ...). The context is fed in chunks, one session each, cut at
sentence ends ("inject once, query many times"); the questions follow. Each task is scored with the metric
MemoryAgentBench reports for it; the summarisation and movie-recommendation tasks need scorers memevo does not
have (a three-call summary judge; the ``entity2id.json`` movie table) and say n/a.

Accepted files: the Hugging Face Parquet shards (``Accurate_Retrieval-00000-of-00001.parquet``, ...), a folder
holding them, or the same records as JSON / JSON lines.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from itertools import islice
from pathlib import Path
from typing import Any

from pydantic import field_validator, model_validator

from memevo.agents.errors import UserInputError
from memevo.agents.lazy_model import LazyModel
from memevo.environments.answer_scoring import (
    answer_after_prefix,
    best_over,
    exact_match,
    fraction_contained,
    substring_match,
)
from memevo.environments.benchmarks.environment import BenchmarkEnvironment
from memevo.environments.benchmarks.files import iter_json_records, iter_table_rows, table_files, validated
from memevo.environments.benchmarks.items import BenchItem, Exchange, Question, Session
from memevo.environments.benchmarks.longmemeval import QUESTION_TYPES
from memevo.environments.benchmarks.longmemeval import Record as LongMemEvalRecord
from memevo.environments.benchmarks.longmemeval import judge_prompt as longmemeval_judge_prompt
from memevo.environments.benchmarks.scores import QuestionScore

COMPETENCIES = ("Accurate_Retrieval", "Test_Time_Learning", "Long_Range_Understanding", "Conflict_Resolution")
DEFAULT_CHUNK_CHARS = 16_000
"""~4,000 tokens at ~4 characters a token: MemoryAgentBench's default chunk is 4,096 tokens."""
_START = datetime(2025, 1, 1)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


class Metadata(LazyModel):
    source: str
    question_ids: list[str] | None = None
    question_types: list[str] | None = None
    qa_pair_ids: list[str] | None = None
    keypoints: list[str] | None = None


class Record(LazyModel):
    context: str
    questions: list[str]
    answers: list[list[str]]
    metadata: Metadata

    @field_validator("answers", mode="before")
    @classmethod
    def _answer_lists(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [[str(a) for a in answer] if isinstance(answer, list) else [str(answer)] for answer in value]
        return value

    @model_validator(mode="after")
    def _aligned(self) -> Record:
        if len(self.questions) != len(self.answers):
            raise ValueError(f"{len(self.questions)} questions but {len(self.answers)} answer lists")
        return self


class TaskMetric(LazyModel):
    """How one task family is scored; ``needs`` says what is missing when it cannot be."""

    prefix: str
    metric: str
    needs: str | None = None


TASK_METRICS = (
    TaskMetric(prefix="ruler_qa", metric="substring exact match"),
    TaskMetric(prefix="ruler_niah", metric="recall"),
    TaskMetric(prefix="eventqa", metric="recall (all answer elements)"),
    TaskMetric(prefix="icl_", metric="exact match"),
    TaskMetric(prefix="factconsolidation", metric="substring exact match"),
    TaskMetric(prefix="detective_qa", metric="exact match"),
    TaskMetric(prefix="longmemeval", metric="judge accuracy"),
    TaskMetric(prefix="infbench_sum", metric="summary F1",
               needs="MemoryAgentBench's three-call summary judge (fluency, key-point recall, precision)"),
    TaskMetric(prefix="recsys", metric="recall@5", needs="the entity2id.json movie table"),
)


def task_metric(source: str) -> TaskMetric:
    for task in TASK_METRICS:
        if source.startswith(task.prefix):
            return task
    return TaskMetric(prefix=source, metric="unknown", needs=f"a metric for the unknown source {source!r}")


def read_records(path: Path, *, limit: int | None = None) -> list[tuple[str, Record]]:
    """(competency, record) for the first ``limit`` (default all) records in Parquet shards (a file or a folder of
    them) or JSON."""
    records = [(_competency(file), validated(Record, row, source=file, prefix=f"[{index}]"))
               for file, index, row in islice(_rows(path), limit)]
    if not records:
        raise UserInputError("no records", source=str(path))
    return records


def _rows(path: Path) -> Iterator[tuple[Path, int, Any]]:
    if path.is_dir() or path.suffix in (".parquet", ".arrow"):
        files = table_files(path) if path.is_dir() else [path]
        if not files:
            raise UserInputError("no Parquet or Arrow files found", source=str(path))
        yield from iter_table_rows(files)
    else:
        yield from ((path, index, raw) for index, raw in iter_json_records(path))


def _competency(file: Path) -> str:
    return next((name for name in COMPETENCIES if file.name.startswith(name)), "test")


def chunks(context: str, max_chars: int) -> list[str]:
    """The context cut at sentence ends into pieces of at most ``max_chars`` (a longer sentence stays whole)."""
    pieces: list[str] = []
    current = ""
    for sentence in _SENTENCE_END.split(context):
        if current and len(current) + 1 + len(sentence) > max_chars:
            pieces.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}" if current else sentence
    if current:
        pieces.append(current)
    return pieces


_INSTRUCTIONS = {
    "icl_": "Reply with the label only.",
    "factconsolidation": "Facts carry serial numbers; a fact with a larger number replaces an older one it "
                         "contradicts. Answer very briefly.",
    "eventqa": "Say what happens next.",
}


def prompt_for(source: str, question: str) -> str:
    instruction = next((text for prefix, text in _INSTRUCTIONS.items() if source.startswith(prefix)),
                       "Answer as briefly as you can.")
    return f"{question}\n\n{instruction}"


class MemoryAgentBenchEnvironment(BenchmarkEnvironment):
    name = "memoryagentbench"

    def __init__(self, path: str | Path, *, chunk_chars: int = DEFAULT_CHUNK_CHARS, **kwargs: Any) -> None:
        super().__init__(path, **kwargs)
        self.chunk_chars = chunk_chars
        self.gold: dict[str, tuple[Record, int]] = {}

    def _load(self) -> list[BenchItem]:
        items = []
        for number, (competency, record) in enumerate(read_records(self.path, limit=self.limit)):
            items.append(self._item(f"{record.metadata.source}/{number}", competency, record))
        return items

    def _item(self, item_id: str, competency: str, record: Record) -> BenchItem:
        sessions = [Session(session_id=f"{item_id}/chunk{index}", when=_START + timedelta(minutes=index),
                            exchanges=[Exchange(user=f"Remember this material (part {index + 1}):\n{piece}",
                                                assistant="Noted.")])
                    for index, piece in enumerate(chunks(record.context, self.chunk_chars))]
        asked_at = _START + timedelta(minutes=len(sessions) + 1)
        ids = record.metadata.qa_pair_ids or record.metadata.question_ids or []
        questions = []
        for index, text in enumerate(record.questions):
            question_id = f"{item_id}/{ids[index] if index < len(ids) else index}"
            self.gold[question_id] = (record, index)
            questions.append(Question(question_id=question_id, category=record.metadata.source, question=text,
                                      prompt=prompt_for(record.metadata.source, text), asked_at=asked_at))
        return BenchItem(item_id=item_id, split=competency, sessions=sessions, questions=questions)

    async def score(self, item: BenchItem, question: Question, reply: str) -> QuestionScore:
        record, index = self.gold[question.question_id]
        task = task_metric(record.metadata.source)
        base = dict(item_id=item.item_id, question_id=question.question_id, category=question.category,
                    metric=task.metric, reply=reply)
        if task.needs is not None:
            return QuestionScore(**base, value=None, na_reason=f"needs {task.needs}")
        if task.prefix == "longmemeval":
            return await self.judged(item, question, reply, longmemeval_judge_prompt(
                self._longmemeval_record(record, index), reply))
        return QuestionScore(**base, value=self._reference_score(task.prefix, reply, record.answers[index]))

    @staticmethod
    def _reference_score(prefix: str, reply: str, golds: list[str]) -> float:
        if prefix == "ruler_niah":
            return fraction_contained(reply, golds)
        if prefix == "eventqa":
            return float(fraction_contained(reply, golds) == 1.0)
        metric: Callable[[str, str], float | bool] = (substring_match if prefix in ("ruler_qa", "factconsolidation")
                                                       else exact_match)
        readings = {reply, answer_after_prefix(reply), answer_after_prefix(reply, "label:")}
        return max(best_over(metric, reading, golds) for reading in readings)

    @staticmethod
    def _longmemeval_record(record: Record, index: int) -> LongMemEvalRecord:
        """The fields LongMemEval's judge needs, from the metadata MemoryAgentBench keeps per question."""
        types = record.metadata.question_types or []
        ids = record.metadata.question_ids or []
        question_type = types[index] if index < len(types) and types[index] in QUESTION_TYPES else "multi-session"
        return LongMemEvalRecord(question_id=ids[index] if index < len(ids) else str(index),
                                 question_type=question_type,  # type: ignore[arg-type]
                                 question=record.questions[index], answer=" / ".join(record.answers[index]),
                                 question_date="", haystack_session_ids=[], haystack_dates=[], haystack_sessions=[])
