"""Plain records an episode produces, saved as they are made so a killed run can resume.

Choice numbers are 1-based everywhere, as shown to the agent; ``None`` means the reply did not parse.
The memory an agent consulted is kept once per period in ``PeriodResult.memories`` and referenced by
its key from every question and probe that consulted it: a native agent consults its whole history for
each question, and repeating it per record made output grow with periods x questions x history.
"""

from __future__ import annotations

import zlib
from typing import Any, Literal

from pydantic import Field, model_validator

from memevo.agents.buffered import WriteCounters
from memevo.core.lazy_model import LazyModel
from memevo.environments.qa import AnsweredBy


def remember(memories: dict[str, str], text: str) -> str:
    """Store ``text`` in ``memories`` (once) and return its key, the CRC-32 of its content; '' for no memory.

    Stored texts are compared first: the same text is usually the same object (an agent's rendering of
    its frozen state), so a repeat costs an identity check, and only a new text is checksummed.
    """
    if not text:
        return ""
    for key, stored in memories.items():
        if stored is text or stored == text:
            return key
    key = f"{zlib.crc32(text.encode('utf-8')):08x}"
    while key in memories:  # two different texts with one checksum
        key += "+"
    memories[key] = text
    return key



ScoringMethod = Literal["choice", "exact_match", "substring_match", "recall", "token_f1", "llm_judge"]
"""How an answer is scored: the chosen option against the gold one (multiple choice), or a free-text reply
against the gold text by exact match, by the gold text appearing in it (substring match), by the share of gold
elements it names (recall), by token F1, or by an LLM judge (through the gateway, role ``judge``)."""

SCORING_NAMES: dict[str, str] = {
    "choice": "choice", "exact_match": "exact match", "substring_match": "substring match", "recall": "recall",
    "token_f1": "token F1", "llm_judge": "LLM judge",
}
"""How a summary names each scoring method."""


class QARecord(LazyModel):
    """One question put to the agent at the end of one period: multiple choice (``choice``/``gold`` are option
    numbers) or free text (``answer``/``gold_answer`` are texts and ``score`` the [0, 1] credit)."""

    user_id: str
    period: int
    question_index: int
    prompt: str
    raw_reply: str
    retry_reply: str | None = None
    choice: int | None = Field(description="1-based chosen option; None when the reply never parsed.")
    gold: int | None = Field(description="1-based gold option; None for a free-text question.")
    n_choices: int = Field(description="Options offered; 0 for a free-text question.")
    correct: bool = Field(description="Full credit (``value`` 1).")
    format_error: bool = False
    random_fallback: bool = Field(default=False, description="amemgym_compat: choice drawn at random after a parse failure.")
    memory_id: str = Field(default="", description="Key of the consulted memory in the period's ``memories``; '' for none.")
    answer_mode: AnsweredBy = Field(
        default="generated", description="How the answer was given (see environments/answering.py).")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    scoring: ScoringMethod = Field(default="choice", description="How the answer was scored.")
    score: float | None = Field(default=None, ge=0.0, le=1.0, description="Free text: the [0, 1] credit; None for multiple "
                                "choice, whose credit is ``correct``.")
    answer: str | None = Field(default=None, description="Free text: the agent's answer as scored.")
    gold_answer: str | None = Field(default=None, description="Free text: the gold answer.")
    category: str | None = Field(default=None, description="The benchmark's question category (None: not categorised).")
    abstention: bool = Field(default=False, description="The question cannot be answered from the sessions; the "
                             "credit is for saying so (LongMemEval's ``_abs`` questions).")

    @property
    def value(self) -> float:
        """The credit in [0, 1] that accuracy averages: ``score`` where given, else 1 for a correct choice."""
        return float(self.correct) if self.score is None else self.score


class ProbeRecord(LazyModel):
    """The diagnosis probe (F.5) for one question's required states at one period."""

    user_id: str
    period: int
    question_index: int
    predicted: dict[str, str | None]
    truth: dict[str, str]
    correct: dict[str, bool]
    format_error: bool = False
    memory_id: str = Field(default="", description="Key of the consulted memory in the period's ``memories``; '' for none.")
    unread: list[str] | None = Field(
        default=None, description="Keys whose value could not be read (no JSON object, or the key missing); a key "
        "present with a non-string value was read, and is wrong. None in records made before this field: "
        "then every None in ``predicted`` counts as unread.")

    @property
    def unread_keys(self) -> list[str]:
        if self.unread is not None:
            return self.unread
        return [key for key, value in self.predicted.items() if value is None]


class PeriodResult(LazyModel):
    """Everything one period of one user produced."""

    user_id: str
    period: int
    transcripts: list[list[dict[str, str]]] = []
    qa: list[QARecord] = []
    probes: list[ProbeRecord] = []
    memory_writes: WriteCounters | None = Field(
        default=None, description="The agent's memory-write requests, retries and failures during this period "
        "(None for agents without a write path).")
    memories: dict[str, str] = Field(default={}, description="Consulted memories by key (see ``remember``).")

    @model_validator(mode="before")
    @classmethod
    def _reference_inline_memories(cls, data: Any) -> Any:
        """Read records written before memories were referenced (each with its own ``consulted_memory``)."""
        if not isinstance(data, dict):
            return data
        memories = dict(data.get("memories") or {})
        moved = {}
        for field in ("qa", "probes"):
            records = data.get(field) or []
            if any(isinstance(record, dict) and "consulted_memory" in record for record in records):
                moved[field] = [_referenced(record, memories) for record in records]
        return {**data, **moved, "memories": memories} if moved else data

    def consulted_memory(self, record: QARecord | ProbeRecord) -> str:
        """The memory ``record`` consulted ('' when none)."""
        return self.memories.get(record.memory_id, "")

    def without_traces(self) -> PeriodResult:
        """This period without its transcripts and consulted memories (both are on disk): all that scoring
        needs, a small part of a native agent's period (whose memory is its whole history)."""
        return self.model_copy(update={"transcripts": [], "memories": {}})


def _referenced(record: Any, memories: dict[str, str]) -> Any:
    if not isinstance(record, dict) or "consulted_memory" not in record:
        return record
    text = record["consulted_memory"]
    rest = {key: value for key, value in record.items() if key != "consulted_memory"}
    return {**rest, "memory_id": remember(memories, text)}


class EpisodeResult(LazyModel):
    """One agent run through one item."""

    user_id: str
    policy_id: str
    periods: list[PeriodResult] = []

    def without_traces(self) -> EpisodeResult:
        """Every period ``without_traces``."""
        return self.model_copy(update={"periods": [period.without_traces() for period in self.periods]})
