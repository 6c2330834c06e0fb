"""LongMemEval (xiaowu0162/LongMemEval; ``longmemeval_s_cleaned``/``_m_cleaned``/``_oracle`` JSON, or the original
``longmemeval_s``/``_m``, not shipped) as an environment.

Each record is one question with its own haystack of user-assistant sessions; the sessions are replayed in date
order (the oracle file does not sort them) with the ``has_answer`` evidence labels removed, then the question is
asked. Scored as LongMemEval scores: an LLM judge says yes or no (credit when its reply contains "yes", as
LongMemEval's ``evaluate_qa.py`` reads it), with instructions per ``question_type``
(off-by-one day counts allowed for temporal reasoning, an updated answer enough for knowledge updates, a rubric
for preferences) and an abstention instruction for ids containing ``_abs``, reported per question type.
LongMemEval also reports the mean over types (task-averaged accuracy) and the abstention questions' accuracy; the
score summary shows both (``Scores.category_mean`` and ``Scores.abstention``).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import field_validator, model_validator

from memevo.core.errors import UserInputError
from memevo.core.lazy_model import LazyModel
from memevo.environments.answer_scores import judge_answer
from memevo.environments.benchmarks.base import BenchmarkEnvironment
from memevo.environments.benchmarks.files import iter_json_records, parse_date, validated
from memevo.environments.protocol import AnswerScore, QuestionView
from memevo.environments.replay import ReplayItem, ReplayQuestion, ReplaySession

if TYPE_CHECKING:
    from memevo.agents.llm.protocol import ChatClient
    from memevo.environments.runner import EpisodeConfig

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


def read_records(path: Path, *, limit: int | None = None) -> Iterator[Record]:
    """The first ``limit`` (default all) records of a LongMemEval JSON file (an array, streamed), validated, dates
    parsed, one at a time (LongMemEval M is gigabytes: a caller keeps what it needs of each)."""
    empty = True
    for index, raw in islice(iter_json_records(path), limit):
        record = validated(Record, raw, source=path, prefix=f"[{index}]")
        _check_date(record.question_date, path, f"[{index}].question_date")
        for position, date in enumerate(record.haystack_dates):
            _check_date(date, path, f"[{index}].haystack_dates[{position}]")
        empty = False
        yield record
    if empty:
        raise UserInputError("no records", source=str(path))


def _check_date(text: str, path: Path, field: str) -> datetime:
    return parse_date(text, DATE_FORMAT, "2023/05/20 (Sat) 02:21", path, field)


_RUBRIC = {
    "temporal-reasoning": " Do not count an off-by-one error in a number of days, weeks or months as wrong.",
    "knowledge-update": " If the response mentions earlier information as well, it is still correct when the "
                        "updated answer it gives is the correct one.",
}


def judge_prompt(question_type: str, abstention: bool) -> str:
    """The yes/no question the judge answers (memevo's wording of LongMemEval's rules), a template with
    ``{question}``, ``{gold}`` and ``{reply}``."""
    if abstention:
        return ("The question below cannot be answered from the conversation history; the explanation says why. "
                "Does the model's response recognise that the question cannot be answered (for instance by saying "
                "the information was never given, or is incomplete)? Answer yes or no only.\n\n"
                "Question: {question}\n\nExplanation: {gold}\n\nModel response: {reply}")
    if question_type == "single-session-preference":
        return ("Below are a question, a rubric describing a good personalised response, and a model's response. "
                "Answer yes if the response recalls and uses the user's personal information correctly, as the "
                "rubric describes; it need not cover every point of the rubric. Otherwise answer no. Answer yes or "
                "no only.\n\nQuestion: {question}\n\nRubric: {gold}\n\nModel response: {reply}")
    return ("Below are a question, its correct answer and a model's response. Answer yes if the response contains "
            "the correct answer, states something equivalent, or gives every step that leads to it; answer no if it "
            f"has only part of what the answer needs.{_RUBRIC.get(question_type, '')} Answer yes or no only."
            "\n\nQuestion: {question}\n\nCorrect answer: {gold}\n\nModel response: {reply}")


def is_abstention(question_id: str) -> bool:
    return "_abs" in question_id


def longmemeval_verdict(reply: str) -> float:
    """LongMemEval's reading of the judge (``evaluate_qa.py``): credit when "yes" appears anywhere in the reply,
    lower-cased ("Yes." and "The answer is yes." alike)."""
    return float("yes" in reply.lower())


Scoring = Literal["judge", "exact_match"]


class LongMemEvalEnvironment(BenchmarkEnvironment):
    """One item per record (its own haystack, then its one question). ``scoring="exact_match"`` is a cheap check
    without a judge; it is not LongMemEval's metric (the records say ``exact_match``, not ``llm_judge``), and it
    leaves the abstention questions out, since their gold text is an explanation."""

    name: ClassVar[str] = "longmemeval"
    record_keys: ClassVar[frozenset[str]] = frozenset({"question_id", "question", "haystack_sessions"})
    id_field: ClassVar[str] = "question_id"

    def __init__(self, episode: EpisodeConfig, *, judge: ChatClient | None = None,
                 scoring: Scoring = "judge") -> None:
        super().__init__(episode, judge=judge)
        self.scoring = scoring

    def load_items(self, source: str | Path, *, limit: int | None = None) -> list[ReplayItem]:
        self.load_warnings = []
        items, left_out = [], 0
        for record in read_records(Path(source), limit=limit):
            self.load_warnings += [f"{record.question_id}: answer session {session_id!r} is not in its haystack"
                                   for session_id in record.answer_session_ids
                                   if session_id not in record.haystack_session_ids
                                   and not is_abstention(record.question_id)]
            if self.scoring == "exact_match" and is_abstention(record.question_id):
                left_out += 1
            else:
                items.append(self._item(record))
        if left_out:
            self.load_warnings.append(f"{left_out} abstention questions left out: exact match cannot score them")
        return items

    def _item(self, record: Record) -> ReplayItem:
        dated = sorted(zip(record.haystack_dates, record.haystack_session_ids, record.haystack_sessions,
                           strict=True), key=lambda entry: _time(entry[0]))
        sessions = [ReplaySession(id=session_id, time=_time(date),
                                  messages=[{"role": turn.role, "content": turn.content} for turn in turns])
                    for date, session_id, turns in dated]
        question = ReplayQuestion(query=record.question, gold=record.answer, category=record.question_type,
                                  scoring="llm_judge" if self.scoring == "judge" else "exact_match",
                                  asked_at=_time(record.question_date), abstention=is_abstention(record.question_id))
        return ReplayItem(id=record.question_id, sessions=sessions, questions=[question])

    async def score_answer(self, item: ReplayItem, period: int, question: QuestionView, reply: str) -> AnswerScore:
        if self.scoring != "judge" or self.judge is None:
            return await super().score_answer(item, period, question, reply)
        template = judge_prompt(question.category or "", item.questions[question.index].abstention)
        score, verdict = await judge_answer(self.judge, question.query, question.gold, reply, prompt=template,
                                            verdict=longmemeval_verdict)
        return AnswerScore(score=score, method="llm_judge", correct=score == 1.0, detail=verdict)


def _time(text: str) -> datetime:
    return datetime.strptime(text.strip(), DATE_FORMAT)
