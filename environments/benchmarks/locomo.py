"""LoCoMo (snap-research/LoCoMo, ``data/locomo10.json``, CC BY-NC 4.0, not shipped) as an environment.

A sample is a conversation between two speakers over numbered sessions (``session_N`` with its
``session_N_date_time``), then questions in five categories. Scored as LoCoMo's evaluation does: token F1
with Porter stemming (category 1, multi-hop, per comma-separated part; category 3 against the gold text
before its first ';'); category 5 (adversarial) by LoCoMo's rule: credit when the reply says "not mentioned" or "no
information available" (a chosen option by its text, an unreadable reply by its own words). Its scorer rounds each
question's F1 to 3 decimals before averaging; memevo does not round, so a mean can differ from LoCoMo's in the
fourth decimal.

Two ways of asking (``--env-option asking=...``): ``memevo`` (default) offers category 5 as memevo's choice between
"Not mentioned in the conversation" (the gold) and the adversarial answer, answered in the run's answer mode
(calibrated likelihood on the embedded model); ``authors`` asks every question in free text as LoCoMo's baseline
does: a short phrase, dates asked for in temporal questions, the two options lettered "(a) ... (b) ..." in the
question's text and a reply of one letter read as that option.

The turns reach the agent as ``Name: text`` (the questions name the speakers), and a small model copies that form
into its reply ("Caroline: Biscuit", sometimes followed by the other speaker's next line); a reply is scored
without the speaker's name and without any later line that starts with one, since that is the transcript's
format, not an answer.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, get_args

from pydantic import Field, model_validator

from memevo.core.errors import UserInputError
from memevo.core.lazy_model import LazyModel
from memevo.environments.benchmarks.answer_scoring import (
    lettered_option,
    locomo_f1,
    multi_part_f1,
    porter_stemmer,
    says_not_mentioned,
)
from memevo.environments.benchmarks.base import BenchmarkEnvironment
from memevo.environments.benchmarks.files import iter_json_records, parse_date, validated
from memevo.environments.capabilities import Capabilities
from memevo.environments.protocol import AnswerScore, QuestionView
from memevo.environments.records import ScoringMethod
from memevo.environments.replay import (
    CLOZE_INSTRUCTION,
    ReplayItem,
    ReplayQuestion,
    ReplaySession,
    option_number,
    short_answer_prompt,
)

if TYPE_CHECKING:
    from memevo.agents.llm.protocol import ChatClient
    from memevo.environments.runner import EpisodeConfig

CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
UNSTEMMED = "F1 over unstemmed tokens: nltk is not installed (LoCoMo stems with Porter's stemmer)"
NOT_MENTIONED = "Not mentioned in the conversation"
Asking = Literal["memevo", "authors"]
"""How questions are put: memevo's prompts (category 5 as a choice), or free text as LoCoMo's baseline asks."""
ADVERSARIAL_DETAIL = "LoCoMo adversarial: credit for saying it is not mentioned"
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
        dates[number] = parse_date(date, _DATE_FORMAT, "1:56 pm on 8 May, 2023", path, field)
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




def messages(turns: list[Turn], speaker_a: str) -> list[dict[str, str]]:
    """The first speaker's turns as the user's messages, the second's as the assistant's, each prefixed with the
    speaker's name (the replay pairs a message without a partner with an empty one)."""
    return [{"role": "user" if turn.speaker == speaker_a else "assistant", "content": turn.rendered()}
            for turn in turns]


def speakers(item: ReplayItem) -> set[str]:
    """The speakers' names, read back from the turns as ``Turn.rendered`` wrote them."""
    return {message["content"].split(": ", 1)[0] for session in item.sessions for message in session.messages
            if ": " in message.get("content", "")}


def without_speakers(reply: str, names: set[str]) -> str:
    """``reply``'s own turn: a leading ``Name:`` naming a speaker dropped, and the reply cut where a line starts with
    one (the model going on with the transcript)."""
    if not names:
        return reply.strip()
    speaker = "|".join(re.escape(name) for name in sorted(names))
    text = re.sub(rf"^\s*(?:{speaker}):", "", reply)
    return re.split(rf"\n\s*(?:{speaker}):", text, maxsplit=1)[0].strip()


def adversarial_choices(item_id: str, index: int, adversarial: str) -> list[str]:
    """The two options of an adversarial question: LoCoMo flips a coin per question; here a hash of the item and
    question decides, so every run shows the same order."""
    first = hashlib.sha256(f"{item_id}/{index}".encode()).digest()[0] % 2 == 0
    return [NOT_MENTIONED, adversarial] if first else [adversarial, NOT_MENTIONED]


class LoCoMoEnvironment(BenchmarkEnvironment):
    name: ClassVar[str] = "locomo"
    capabilities: ClassVar[Capabilities] = Capabilities(answers="mixed", categories=True, options=("asking",))
    record_keys: ClassVar[frozenset[str]] = frozenset({"sample_id", "conversation", "qa"})
    id_field: ClassVar[str] = "sample_id"
    calibration_prompt: ClassVar[str | None] = CLOZE_INSTRUCTION
    """"Not mentioned in the conversation" is likelier than any answer whatever was asked or remembered, so
    likelihood answers are calibrated by each option's likelihood without the question, in the agent's context
    (``answering.LikelihoodAnswers``; ``benchmarks/locomo_adversarial.py`` measured the choice)."""

    def __init__(self, episode: EpisodeConfig, *, judge: ChatClient | None = None, asking: str = "memevo") -> None:
        super().__init__(episode, judge=judge)
        if asking not in get_args(Asking):
            raise UserInputError(f"unknown way of asking {asking!r}; one of {', '.join(get_args(Asking))}",
                                 field="--env-option asking")
        self.asking = asking
        self.stem = porter_stemmer()

    def load_items(self, source: str | Path, *, limit: int | None = None) -> list[ReplayItem]:
        samples = read_samples(Path(source), limit=limit)
        self.load_warnings = [
            f"{sample.sample_id} question {index}: evidence {evidence!r} names no turn"
            for sample, conversation in samples
            for index, qa in enumerate(sample.qa)
            for evidence in qa.evidence
            if evidence not in {turn.dia_id for turns in conversation.sessions.values() for turn in turns}]
        return [self._item(sample, conversation) for sample, conversation in samples]

    def _item(self, sample: Sample, conversation: Conversation) -> ReplayItem:
        sessions = [ReplaySession(id=f"session_{number}", time=conversation.dates[number],
                                  messages=messages(turns, conversation.speaker_a))
                    for number, turns in conversation.sessions.items()]
        questions = [self._question(sample.sample_id, index, qa) for index, qa in enumerate(sample.qa)]
        return ReplayItem(id=sample.sample_id, sessions=sessions, questions=questions)

    def _question(self, item_id: str, index: int, qa: QA) -> ReplayQuestion:
        category = CATEGORY_NAMES[qa.category]
        if qa.category != 5:
            return ReplayQuestion(query=qa.question, gold=str(qa.answer), category=category, scoring="token_f1")
        choices = adversarial_choices(item_id, index, str(qa.adversarial_answer))
        if self.asking == "memevo":
            return ReplayQuestion(query=qa.question, gold=NOT_MENTIONED, category=category, scoring="choice",
                                  choices=choices)
        offered = f"{qa.question} Which is right: (a) {choices[0]} (b) {choices[1]}?"
        return ReplayQuestion(query=offered, gold=NOT_MENTIONED, category=category, scoring="substring_match",
                              reference={"options": dict(zip("ab", choices, strict=True))})

    def answer_prompt(self, question: QuestionView) -> str:
        if self.asking == "authors":
            return authors_prompt(question)
        if question.category == "temporal":
            return short_answer_prompt(f"{question.query} Give an approximate date, using the dates of our "
                                       "conversations.")
        return super().answer_prompt(question)

    async def score_answer(self, item: ReplayItem, period: int, question: QuestionView, reply: str) -> AnswerScore:
        if question.choices is not None:
            chosen = option_number(reply, len(question.choices))
            return adversarial_score(reply if chosen is None else question.choices[chosen - 1], method="choice")
        if question.category == "adversarial":
            options = item.questions[question.index].reference.get("options", {})
            return adversarial_score(lettered_option(reply, options), method="substring_match")
        gold = question.gold.split(";")[0].strip() if question.category == "open-domain" else question.gold
        reply = without_speakers(reply, speakers(item))
        score = (multi_part_f1(reply, gold, self.stem) if question.category == "multi-hop"
                 else locomo_f1(reply, gold, self.stem))
        return AnswerScore(score=score, method="token_f1", correct=score == 1.0,
                           detail=None if self.stem is not None else UNSTEMMED)

    async def score_unread_choice(self, item: ReplayItem, question: QuestionView, reply: str) -> AnswerScore:
        """LoCoMo reads the reply's words: "No information available" is credited though it names no option."""
        return adversarial_score(reply, method="choice")


def adversarial_score(text: str, *, method: ScoringMethod) -> AnswerScore:
    """LoCoMo's adversarial rule on the text a reply stands for (a chosen option's, or the reply's own)."""
    score = says_not_mentioned(text)
    return AnswerScore(score=score, method=method, correct=score == 1.0, detail=ADVERSARIAL_DETAIL)


def authors_prompt(question: QuestionView) -> str:
    """A question as LoCoMo's baseline puts it: a short phrase in the conversation's own words; temporal questions
    ask for an approximate date from the sessions' dates; adversarial ones carry their lettered options."""
    if question.category == "adversarial":
        return f"Answer the question below from the conversations above.\n\nQuestion: {question.query} Short answer:"
    query = question.query
    if question.category == "temporal":
        query += " Use the dates of the conversations to answer with an approximate date."
    return ("Answer the question below from the conversations above with a short phrase, in the conversations' "
            f"own words where you can.\n\nQuestion: {query} Short answer:")
