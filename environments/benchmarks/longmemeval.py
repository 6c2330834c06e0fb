"""LongMemEval (xiaowu0162/LongMemEval; ``longmemeval_s``/``_m``/``_oracle`` JSON, not shipped) as an environment.

Each record is one question with its own haystack of user-assistant sessions; the sessions are replayed in date
order (the oracle file does not sort them) with the ``has_answer`` evidence labels removed, then the question is
asked. Scored as LongMemEval scores: an LLM judge says yes or no, with instructions per ``question_type``
(off-by-one day counts allowed for temporal reasoning, an updated answer enough for knowledge updates, a rubric
for preferences) and an abstention instruction for ids containing ``_abs``. Reported per question type, as the
mean over types (task-averaged), overall, and over abstention questions.
"""

from __future__ import annotations

from datetime import datetime
from itertools import islice
from pathlib import Path
from typing import Any, Literal

from pydantic import field_validator, model_validator

from memevo.agents.errors import UserInputError
from memevo.agents.lazy_model import LazyModel
from memevo.environments.answer_scoring import exact_match
from memevo.environments.benchmarks.environment import BenchmarkEnvironment
from memevo.environments.benchmarks.files import iter_json_records, validated
from memevo.environments.benchmarks.items import BenchItem, Exchange, Question, Session
from memevo.environments.benchmarks.scores import QuestionScore, ScoreTable, by_category, cell, mean_of_cells

QuestionType = Literal["single-session-user", "single-session-assistant", "single-session-preference",
                       "temporal-reasoning", "knowledge-update", "multi-session"]
QUESTION_TYPES: tuple[str, ...] = QuestionType.__args__  # type: ignore[attr-defined]
DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"


class Turn(LazyModel):
    role: Literal["user", "assistant"]
    content: str
    has_answer: bool | None = None


class Record(LazyModel):
    question_id: str
    question_type: QuestionType
    question: str
    answer: str
    question_date: str
    haystack_session_ids: list[str]
    haystack_dates: list[str]
    haystack_sessions: list[list[Turn]]
    answer_session_ids: list[str] = []

    @field_validator("answer", mode="before")
    @classmethod
    def _answer_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int | float) else value

    @model_validator(mode="after")
    def _aligned(self) -> Record:
        sizes = {len(self.haystack_session_ids), len(self.haystack_dates), len(self.haystack_sessions)}
        if len(sizes) != 1:
            raise ValueError("haystack_session_ids, haystack_dates and haystack_sessions differ in length")
        return self

    @property
    def abstention(self) -> bool:
        return "_abs" in self.question_id


def read_records(path: Path, *, limit: int | None = None) -> list[Record]:
    """The first ``limit`` (default all) records of a LongMemEval JSON file (an array, streamed), validated, dates
    parsed."""
    records = []
    for index, raw in islice(iter_json_records(path), limit):
        record = validated(Record, raw, source=path, prefix=f"[{index}]")
        parse_date(record.question_date, path, f"[{index}].question_date")
        for position, date in enumerate(record.haystack_dates):
            parse_date(date, path, f"[{index}].haystack_dates[{position}]")
        records.append(record)
    if not records:
        raise UserInputError("no records", source=str(path))
    return records


def parse_date(text: str, path: Path, field: str) -> datetime:
    try:
        return datetime.strptime(text.strip(), DATE_FORMAT)
    except ValueError as error:
        raise UserInputError(f"date {text!r} is not like '2023/05/20 (Sat) 02:21'", source=str(path),
                             field=field) from error


def exchanges(turns: list[Turn]) -> list[Exchange]:
    """A user turn and the assistant turn after it make one exchange; an unpaired turn gets an empty partner.
    The ``has_answer`` labels are evidence for scoring retrieval and never reach the agent."""
    paired: list[Exchange] = []
    pending: str | None = None
    for turn in turns:
        if turn.role == "user":
            if pending is not None:
                paired.append(Exchange(user=pending, assistant=""))
            pending = turn.content
        else:
            paired.append(Exchange(user=pending or "", assistant=turn.content))
            pending = None
    if pending is not None:
        paired.append(Exchange(user=pending, assistant=""))
    return paired


_RUBRIC = {
    "temporal-reasoning": " Do not count an off-by-one error in a number of days, weeks or months as wrong.",
    "knowledge-update": " If the response mentions earlier information as well, it is still correct when the "
                        "updated answer it gives is the correct one.",
}


def judge_prompt(record: Record, response: str) -> str:
    """The yes/no question the judge answers for one response (memevo's wording of LongMemEval's rules)."""
    if record.abstention:
        return ("The question below cannot be answered from the conversation history; the explanation says why. "
                "Does the model's response recognise that the question cannot be answered (for instance by saying "
                "the information was never given, or is incomplete)? Answer yes or no only.\n\n"
                f"Question: {record.question}\n\nExplanation: {record.answer}\n\nModel response: {response}")
    if record.question_type == "single-session-preference":
        return ("Below are a question, a rubric describing a good personalised response, and a model's response. "
                "Answer yes if the response recalls and uses the user's personal information correctly, as the "
                "rubric describes; it need not cover every point of the rubric. Otherwise answer no. Answer yes or "
                f"no only.\n\nQuestion: {record.question}\n\nRubric: {record.answer}\n\nModel response: {response}")
    return ("Below are a question, its correct answer and a model's response. Answer yes if the response contains "
            "the correct answer, states something equivalent, or gives every step that leads to it; answer no if it "
            f"has only part of what the answer needs.{_RUBRIC.get(record.question_type, '')} Answer yes or no only."
            f"\n\nQuestion: {record.question}\n\nCorrect answer: {record.answer}\n\nModel response: {response}")


Scoring = Literal["judge", "exact_match"]


class LongMemEvalEnvironment(BenchmarkEnvironment):
    """``scoring="exact_match"`` is a cheap check without a judge (normalised reply equals the gold answer); it is
    not LongMemEval's metric, says so in its label, and leaves abstention questions unscored."""

    name = "longmemeval"
    categories = QUESTION_TYPES

    def __init__(self, path: str | Path, *, scoring: Scoring = "judge", **kwargs: Any) -> None:
        super().__init__(path, **kwargs)
        self.scoring = scoring
        self.records: dict[str, Record] = {}

    def _load(self) -> list[BenchItem]:
        return [self._item(record) for record in read_records(self.path, limit=self.limit)]

    def warnings(self) -> list[str]:
        self.items()
        return [f"{record.question_id}: answer session {session_id!r} is not in its haystack"
                for record in self.records.values() if not record.abstention
                for session_id in record.answer_session_ids if session_id not in record.haystack_session_ids]

    def _item(self, record: Record) -> BenchItem:
        self.records[record.question_id] = record
        dated = sorted(zip(record.haystack_dates, record.haystack_session_ids, record.haystack_sessions,
                           strict=True), key=lambda entry: datetime.strptime(entry[0].strip(), DATE_FORMAT))
        sessions = [Session(session_id=session_id, when=datetime.strptime(date.strip(), DATE_FORMAT),
                            exchanges=exchanges(turns)) for date, session_id, turns in dated]
        question = Question(question_id=record.question_id, category=record.question_type, question=record.question,
                            prompt=f"(Today is {record.question_date}.) {record.question}",
                            asked_at=datetime.strptime(record.question_date.strip(), DATE_FORMAT))
        return BenchItem(item_id=record.question_id, sessions=sessions, questions=[question])

    async def score(self, item: BenchItem, question: Question, reply: str) -> QuestionScore:
        record = self.records[question.question_id]
        if self.scoring == "judge":
            return await self.judged(item, question, reply, judge_prompt(record, reply))
        base = dict(item_id=item.item_id, question_id=question.question_id, category=question.category,
                    metric="exact match (not LongMemEval's judge)", reply=reply)
        if record.abstention:
            return QuestionScore(**base, value=None, na_reason="an abstention question needs the judge")
        return QuestionScore(**base, value=float(exact_match(reply, record.answer)))

    def summarise(self, scores: list[QuestionScore]) -> ScoreTable:
        table = by_category(self.name, scores, order=self.categories)
        abstention = [score for score in scores if self.records[score.question_id].abstention]
        metric = table.overall.metric
        table.summaries = {"task-averaged": mean_of_cells(table.by_category.values(), metric),
                           "abstention": cell(abstention, metric)}
        return table
