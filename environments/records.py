"""Plain records an episode produces, saved as they are made so a killed run can resume.

Choice numbers are 1-based everywhere, as shown to the agent; ``None`` means the reply did not parse.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from memevo.agents.buffered import WriteCounters


class QARecord(BaseModel):
    """One multiple-choice question put to the agent at the end of one period."""

    user_id: str
    period: int
    question_index: int
    prompt: str
    raw_reply: str
    retry_reply: str | None = None
    choice: int | None = Field(description="1-based chosen option; None when the reply never parsed.")
    gold: int = Field(description="1-based gold option.")
    n_choices: int
    correct: bool
    format_error: bool = False
    random_fallback: bool = Field(False, description="amemgym_compat: choice drawn at random after a parse failure.")
    consulted_memory: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0


class ProbeRecord(BaseModel):
    """The diagnosis probe (F.5) for one question's required states at one period."""

    user_id: str
    period: int
    question_index: int
    predicted: dict[str, str | None]
    truth: dict[str, str]
    correct: dict[str, bool]
    format_error: bool = False
    consulted_memory: str = ""
    unread: list[str] | None = Field(
        None, description="Keys whose value could not be read (no JSON object, or the key missing); a key "
        "present with a non-string value was read, and is wrong. None in records made before this field: "
        "then every None in ``predicted`` counts as unread.")

    @property
    def unread_keys(self) -> list[str]:
        if self.unread is not None:
            return self.unread
        return [key for key, value in self.predicted.items() if value is None]


class PeriodResult(BaseModel):
    """Everything one period of one user produced."""

    user_id: str
    period: int
    transcripts: list[list[dict[str, str]]] = Field(default_factory=list)
    qa: list[QARecord] = Field(default_factory=list)
    probes: list[ProbeRecord] = Field(default_factory=list)
    memory_writes: WriteCounters | None = Field(
        None, description="The agent's memory-write requests, retries and failures during this period "
        "(None for agents without a write path).")


class EpisodeResult(BaseModel):
    """One agent run through one item."""

    user_id: str
    policy_id: str
    periods: list[PeriodResult] = Field(default_factory=list)
