"""LoCoMo (snap-research/LoCoMo, ``data/locomo10.json``, CC BY-NC 4.0, not shipped) as an environment.

A sample is a conversation between two speakers over numbered sessions (``session_N`` with its
``session_N_date_time``), then questions in five categories. Scored as LoCoMo's evaluation does: token F1
with Porter stemming (category 1, multi-hop, per comma-separated part; category 3 against the gold text
before its first ';'); category 5 (adversarial) offers the adversarial answer beside "Not mentioned in the
conversation" and scores 1 when the reply says it is not mentioned.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime
from itertools import islice
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from memevo.agents.errors import UserInputError
from memevo.agents.lazy_model import LazyModel
from memevo.environments.answer_scoring import multi_part_f1, porter_stemmer, token_f1
from memevo.environments.benchmarks.environment import BenchmarkEnvironment
from memevo.environments.benchmarks.files import iter_json_records, validated
from memevo.environments.benchmarks.items import BenchItem, Exchange, Question, Session
from memevo.environments.benchmarks.scores import QuestionScore

CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
NOT_MENTIONED = "Not mentioned in the conversation"
_DATE_FORMAT = "%I:%M %p on %d %B, %Y"
_SESSION_KEY = re.compile(r"session_(\d+)")


class Turn(LazyModel):
    speaker: str
    dia_id: str
    text: str
    blip_caption: str | None = None
    """The caption of an image the speaker shared; shown as ``[shares ...]``."""

    def rendered(self) -> str:
        shared = f" [shares {self.blip_caption}]" if self.blip_caption else ""
        return f"{self.speaker}: {self.text}{shared}"


class QA(LazyModel):
    question: str
    answer: str | int | float | None = None
    adversarial_answer: str | int | float | None = None
    evidence: list[str] = []
    category: int = Field(ge=1, le=5)

    @model_validator(mode="after")
    def _has_gold(self) -> QA:
        needed = "adversarial_answer" if self.category == 5 else "answer"
        if getattr(self, needed) is None:
            raise ValueError(f"category {self.category} needs '{needed}'")
        return self


class Conversation(LazyModel):
    speaker_a: str
    speaker_b: str
    sessions: dict[int, list[Turn]]
    dates: dict[int, datetime]


class Sample(LazyModel):
    sample_id: str
    conversation: dict[str, Any]
    qa: list[QA]


def read_samples(path: Path, *, limit: int | None = None) -> list[tuple[Sample, Conversation]]:
    """The first ``limit`` (default all) samples in ``locomo10.json`` (a JSON array, streamed), validated."""
    samples = []
    for index, raw in islice(iter_json_records(path), limit):
        sample = validated(Sample, raw, source=path, prefix=f"[{index}]")
        samples.append((sample, read_conversation(sample.conversation, path, f"[{index}].conversation")))
    if not samples:
        raise UserInputError("no samples", source=str(path))
    return samples


def read_conversation(raw: dict[str, Any], path: Path, prefix: str) -> Conversation:
    """Numbered sessions and their dates; date keys of sessions that are absent (locomo10 has some) are ignored."""
    sessions: dict[int, Any] = {}
    for key, value in raw.items():
        match = _SESSION_KEY.fullmatch(key)
        if match:
            sessions[int(match.group(1))] = value
    dates = {}
    for number in sessions:
        field = f"{prefix}.session_{number}_date_time"
        date = raw.get(f"session_{number}_date_time")
        if not isinstance(date, str):
            raise UserInputError("every session needs its date and time", source=str(path), field=field)
        dates[number] = _parse_date(date, path, field)
    turns = {number: _turns(sessions[number], path, f"{prefix}.session_{number}") for number in sorted(sessions)}
    speakers = {key: raw.get(key) for key in ("speaker_a", "speaker_b")}
    for key, speaker in speakers.items():
        if not isinstance(speaker, str):
            raise UserInputError("the speaker's name is missing", source=str(path), field=f"{prefix}.{key}")
    return Conversation(speaker_a=str(speakers["speaker_a"]), speaker_b=str(speakers["speaker_b"]), sessions=turns,
                        dates=dates)


def _turns(raw: Any, path: Path, prefix: str) -> list[Turn]:
    if not isinstance(raw, list):
        raise UserInputError(f"a session is a list of turns, got {type(raw).__name__}", source=str(path),
                             field=prefix)
    return [validated(Turn, turn, source=path, prefix=f"{prefix}[{index}]") for index, turn in enumerate(raw)]


def _parse_date(text: str, path: Path, field: str) -> datetime:
    try:
        return datetime.strptime(text.strip(), _DATE_FORMAT)
    except ValueError as error:
        raise UserInputError(f"date {text!r} is not like '1:56 pm on 8 May, 2023'", source=str(path),
                             field=field) from error


def exchanges(turns: list[Turn]) -> list[Exchange]:
    """Consecutive turns paired as (first, second) exchanges, each line prefixed with its speaker."""
    rendered = [turn.rendered() for turn in turns]
    return [Exchange(user=rendered[i], assistant=rendered[i + 1] if i + 1 < len(rendered) else "")
            for i in range(0, len(rendered), 2)]


def option_order(question_id: str) -> bool:
    """Whether "Not mentioned" comes first: LoCoMo flips a coin per question; here a hash of its id decides, so
    every run shows the same order."""
    return hashlib.sha256(question_id.encode()).digest()[0] % 2 == 0


class LocomoEnvironment(BenchmarkEnvironment):
    name = "locomo"
    categories = tuple(CATEGORY_NAMES.values())

    def __init__(self, path: str | Path, **kwargs: Any) -> None:
        super().__init__(path, **kwargs)
        self.gold: dict[str, QA] = {}
        self.stem = porter_stemmer()
        self._unknown_evidence: list[str] = []

    @property
    def metric(self) -> str:
        return "token F1" if self.stem is not None else "token F1 (unstemmed: nltk not installed)"

    def _load(self) -> list[BenchItem]:
        samples = read_samples(self.path, limit=self.limit)
        self._unknown_evidence = [
            f"{sample.sample_id} question {index}: evidence {evidence!r} names no turn"
            for sample, conversation in samples
            for index, qa in enumerate(sample.qa)
            for evidence in qa.evidence
            if evidence not in {turn.dia_id for turns in conversation.sessions.values() for turn in turns}]
        return [self._item(sample, conversation) for sample, conversation in samples]

    def warnings(self) -> list[str]:
        self.items()
        return list(self._unknown_evidence)

    def _item(self, sample: Sample, conversation: Conversation) -> BenchItem:
        sessions = [Session(session_id=f"{sample.sample_id}/session_{number}", when=conversation.dates[number],
                            exchanges=exchanges(turns))
                    for number, turns in conversation.sessions.items()]
        asked_at = max(session.when for session in sessions) if sessions else datetime(2000, 1, 1)
        questions = []
        for index, qa in enumerate(sample.qa):
            question_id = f"{sample.sample_id}/q{index}"
            self.gold[question_id] = qa
            questions.append(Question(question_id=question_id, category=CATEGORY_NAMES[qa.category],
                                      question=qa.question, prompt=self._prompt(question_id, qa), asked_at=asked_at))
        return BenchItem(item_id=sample.sample_id, sessions=sessions, questions=questions)

    def _prompt(self, question_id: str, qa: QA) -> str:
        if qa.category == 2:
            return f"{qa.question} Answer with an approximate date, using the dates of the conversations."
        if qa.category == 5:
            first, second = ((NOT_MENTIONED, str(qa.adversarial_answer)) if option_order(question_id)
                             else (str(qa.adversarial_answer), NOT_MENTIONED))
            return f"{qa.question} Select the correct answer: (a) {first} (b) {second}."
        return qa.question

    async def score(self, item: BenchItem, question: Question, reply: str) -> QuestionScore:
        qa = self.gold[question.question_id]
        return QuestionScore(item_id=item.item_id, question_id=question.question_id, category=question.category,
                             metric=self.metric, value=self.reply_score(question.question_id, qa, reply),
                             reply=reply)

    def reply_score(self, question_id: str, qa: QA, reply: str) -> float:
        if qa.category == 5:
            return float(_says_not_mentioned(_chosen_option(question_id, qa, reply)))
        gold = str(qa.answer)
        if qa.category == 3:
            gold = gold.split(";")[0].strip()
        if qa.category == 1:
            return multi_part_f1(reply, gold, stem=self.stem)
        return token_f1(reply, gold, stem=self.stem, drop_and=True)


def _chosen_option(question_id: str, qa: QA, reply: str) -> str:
    """A one-letter reply ("a"/"b") stands for the option it names, as LoCoMo reads it."""
    letter = reply.strip().lower()
    if len(letter) == 1 and letter in "ab":
        first, second = ((NOT_MENTIONED, str(qa.adversarial_answer)) if option_order(question_id)
                         else (str(qa.adversarial_answer), NOT_MENTIONED))
        return first if letter == "a" else second
    return reply


def _says_not_mentioned(text: str) -> bool:
    lowered = text.lower()
    return "not mentioned" in lowered or "no information available" in lowered
