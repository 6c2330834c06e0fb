"""MemoryAgentBench (HUST-AI-HYZ/MemoryAgentBench; Hugging Face ``ai-hyz/MemoryAgentBench``, not shipped) as an
environment.

A record is one long ``context`` with ``questions``, their acceptable ``answers`` (a list per question) and
``metadata`` whose ``source`` names the task (``ruler_qa1_197k``, ``eventqa_full``, ``icl_banking77_...``,
``factconsolidation_sh_6k``, ``longmemeval_s_...``, ...). The context is fed in chunks, one session each, cut at
sentence ends ("inject once, query many times"); the questions follow. Each task is scored with the metric
MemoryAgentBench reports for it; the summarisation and movie-recommendation tasks need scorers memevo does not
have (a three-call summary judge; the ``entity2id.json`` movie table) and are left out, with a warning.

Accepted files: the Hugging Face Parquet shards (``Accurate_Retrieval-00000-of-00001.parquet``, ...), a folder
holding them, or the same records as JSON / JSON lines.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import field_validator, model_validator

from memevo.core.errors import UserInputError
from memevo.core.lazy_model import LazyModel
from memevo.environments.answer_scores import exact_match, judge_answer
from memevo.environments.benchmarks.answer_scoring import answer_after_prefix, best_over, contains_all, substring_match
from memevo.environments.benchmarks.base import BenchmarkEnvironment
from memevo.environments.benchmarks.files import iter_json_records, iter_table_rows, table_files, validated
from memevo.environments.benchmarks.longmemeval import is_abstention, longmemeval_verdict
from memevo.environments.benchmarks.longmemeval import judge_prompt as longmemeval_judge_prompt
from memevo.environments.protocol import AnswerScore, QuestionView
from memevo.environments.records import ScoringMethod
from memevo.environments.replay import ReplayItem, ReplayQuestion, ReplaySession

if TYPE_CHECKING:
    from memevo.agents.llm.protocol import ChatClient
    from memevo.environments.runner import EpisodeConfig

COMPETENCIES = ("Accurate_Retrieval", "Test_Time_Learning", "Long_Range_Understanding", "Conflict_Resolution")
DEFAULT_CHUNK_CHARS = 16_000
"""~4,000 tokens at ~4 characters a token: MemoryAgentBench's default chunk is 4,096 tokens."""
_START = datetime(2025, 1, 1)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


class Metadata(LazyModel):
    source: str
    question_ids: list[str] | None = None
    question_types: list[str] | None = None


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


class Reference(LazyModel):
    """A question's scoring material, kept in its ``ReplayQuestion.reference``: every acceptable answer, and the
    LongMemEval question type whose judge rubric applies (LongMemEval tasks only)."""

    answers: list[str]
    question_type: str = ""


class TaskMetric(LazyModel):
    """How one task family is scored (``metric`` names MemoryAgentBench's figure, ``scoring`` the method it is
    recorded as); ``needs`` says what memevo lacks when it cannot score the task."""

    prefix: str
    metric: str
    scoring: ScoringMethod = "exact_match"
    needs: str | None = None


TASK_METRICS = (
    TaskMetric(prefix="ruler_qa", metric="substring exact match", scoring="substring_match"),
    TaskMetric(prefix="eventqa", metric="recall (every answer element in the reply)", scoring="recall"),
    TaskMetric(prefix="icl_", metric="exact match"),
    TaskMetric(prefix="factconsolidation", metric="substring exact match", scoring="substring_match"),
    TaskMetric(prefix="detective_qa", metric="exact match"),
    TaskMetric(prefix="longmemeval", metric="judge accuracy", scoring="llm_judge"),
    TaskMetric(prefix="infbench_sum", metric="summary F1",
               needs="MemoryAgentBench's three-call summary judge (fluency, key-point recall, precision)"),
    TaskMetric(prefix="recsys", metric="recall@5", needs="the entity2id.json movie table"),
)


def task_metric(source: str) -> TaskMetric:
    for task in TASK_METRICS:
        if source.startswith(task.prefix):
            return task
    return TaskMetric(prefix=source, metric="unknown", needs="a metric for this source")


def read_records(path: Path, *, limit: int | None = None) -> list[tuple[str | None, Record]]:
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


def _competency(file: Path) -> str | None:
    """The Hub's split a shard belongs to (its file name starts with it); None for other files."""
    return next((name for name in COMPETENCIES if file.name.startswith(name)), None)


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
    """One item per record. Tasks memevo cannot score are left out when read, each with a load warning."""

    name: ClassVar[str] = "memoryagentbench"

    def __init__(self, episode: EpisodeConfig, *, judge: ChatClient | None = None,
                 chunk_chars: int = DEFAULT_CHUNK_CHARS) -> None:
        super().__init__(episode, judge=judge)
        self.chunk_chars = chunk_chars

    def load_items(self, source: str | Path, *, limit: int | None = None) -> list[ReplayItem]:
        self.load_warnings = []
        items = []
        for number, (competency, record) in enumerate(read_records(Path(source), limit=limit)):
            task = task_metric(record.metadata.source)
            if task.needs is not None:
                self.load_warnings.append(f"record {number} ({record.metadata.source}) left out: its {task.metric} "
                                          f"needs {task.needs}")
                continue
            items.append(self._item(f"{record.metadata.source}/{number}", competency, record))
        return items

    def _item(self, item_id: str, competency: str | None, record: Record) -> ReplayItem:
        sessions = [ReplaySession(id=f"chunk{index}", time=_START + timedelta(minutes=index),
                                  messages=[{"role": "user", "content": f"Remember this material (part {index + 1}):"
                                                                         f"\n{piece}"},
                                            {"role": "assistant", "content": "Noted."}])
                    for index, piece in enumerate(chunks(record.context, self.chunk_chars))]
        scoring = task_metric(record.metadata.source).scoring
        types, ids = record.metadata.question_types or [], record.metadata.question_ids or []
        questions = [ReplayQuestion(query=text, gold=" / ".join(golds), category=record.metadata.source,
                                    scoring=scoring, abstention=is_abstention(ids[index] if index < len(ids) else ""),
                                    reference=Reference(answers=golds, question_type=types[index] if index < len(types)
                                                        else "").model_dump())
                     for index, (text, golds) in enumerate(zip(record.questions, record.answers, strict=True))]
        return ReplayItem(id=item_id, sessions=sessions, questions=questions, split=competency)

    def answer_prompt(self, question: QuestionView) -> str:
        return prompt_for(question.category or "", question.query)

    async def score_answer(self, item: ReplayItem, period: int, question: QuestionView, reply: str) -> AnswerScore:
        asked = item.questions[question.index]
        task = task_metric(question.category or "")
        reference = Reference.model_validate(asked.reference)
        if task.prefix == "longmemeval":
            return await self._judged(reference.question_type, asked.abstention, question, reply)
        score = reference_score(task.prefix, reply, reference.answers)
        return AnswerScore(score=score, method=task.scoring, correct=score == 1.0, detail=task.metric)

    async def _judged(self, question_type: str, abstention: bool, question: QuestionView, reply: str) -> AnswerScore:
        if self.judge is None:
            raise UserInputError("MemoryAgentBench's LongMemEval task is scored by an LLM judge: configure llm.judge",
                                 field="llm.judge")
        template = longmemeval_judge_prompt(question_type, abstention)
        score, verdict = await judge_answer(self.judge, question.query, question.gold, reply, prompt=template,
                                            verdict=longmemeval_verdict)
        return AnswerScore(score=score, method="llm_judge", correct=score == 1.0, detail=verdict)


def reference_score(prefix: str, reply: str, golds: list[str]) -> float:
    """MemoryAgentBench's score of a reply for a task family: EventQA's recall of the gold elements; else the reply
    and its parsed answer line are both scored and the better kept, against the best of the acceptable answers."""
    if prefix == "eventqa":
        return contains_all(reply, golds)
    metric: Callable[[str, str], float] = (substring_match if prefix in ("ruler_qa", "factconsolidation")
                                           else exact_match)
    readings = {reply, answer_after_prefix(reply), answer_after_prefix(reply, "label:")}
    return max(best_over(metric, reading, golds) for reading in readings)
