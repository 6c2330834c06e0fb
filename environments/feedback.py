"""Feedback for a prompt proposer, built from one period's question results (AMemGym G.3).

Modes: ``none``; ``question_only`` (question text and the memory the agent consulted, nothing else);
``complete`` (question with lettered choices and the agent's chosen letter). Options add the ground-truth
letter (``complete`` only: a letter means nothing without the choices) and the period's exposed state
updates. Fixes against the reference: letters map correctly (its off-by-one, I.1, is reproducible with
``amemgym_letter_bug``); consulted memory is stored once and referenced, not repeated per question (I.20).
"""

from __future__ import annotations

import json
import string
from enum import Enum
from typing import Literal

from pydantic import ConfigDict, Field, model_validator

from memevo.core.lazy_model import LazyModel
from memevo.environments.amemgym.data.models import Item
from memevo.environments.records import PeriodResult, QARecord


class FeedbackMode(str, Enum):
    none = "none"
    question_only = "question_only"
    complete = "complete"


class FeedbackConfig(LazyModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: FeedbackMode = Field(FeedbackMode.complete, description="none; question_only: the question and the memory "
                               "consulted; complete: also the lettered choices and the agent's letter.")
    with_ground_truth: bool = Field(False, description="Add the right letter (mode complete only).")
    with_exposed_states: bool = Field(False, description="Add the state updates the user revealed in the period.")
    amemgym_letter_bug: bool = Field(False, description="Reproduce AMemGym's off-by-one answer letters.")

    @model_validator(mode="after")
    def _ground_truth_needs_choices(self) -> FeedbackConfig:
        if self.with_ground_truth and self.mode is not FeedbackMode.complete:
            raise ValueError("with_ground_truth needs mode 'complete' (the answer letter refers to the choices)")
        return self


def letter(index: int) -> str:
    """0-based index -> "A", "B", ...; past "Z" continues "AA", "AB", ... so no index is left unnamed."""
    letters = string.ascii_uppercase
    return letters[index] if index < len(letters) else letter(index // len(letters) - 1) + letters[index % len(letters)]


class FeedbackRecord(LazyModel):
    """What the proposer sees about one question."""

    question: str
    question_index: int | None = None
    choices: list[str] | None = None
    """``"(A) text"`` lines; only in complete mode."""
    agent_choice: str | None = None
    """The chosen letter; ``"none (unreadable reply)"`` after a format error; only in complete mode."""
    ground_truth: str | None = None
    correct: bool | None = None
    """Whether the chosen letter was the ground truth; only where the ground truth is shown."""
    memory_ref: int | None = None
    """Index into ``PeriodFeedback.memories`` of the memory the agent consulted."""


class PeriodFeedback(LazyModel):
    """One period's feedback: the records, each distinct consulted memory once, optional state updates."""

    user_id: str
    period: int
    mode: FeedbackMode
    records: list[FeedbackRecord]
    memories: list[str]
    exposed_state_updates: dict[str, str] | None = None


def _chosen_letter(record: QARecord, bug: bool) -> str:
    if record.choice is None:
        return "none (unreadable reply)"
    # The reference indexed its letters with the 1-based choice: choice 1 showed as "B".
    return letter(record.choice if bug else record.choice - 1)


def _record(record: QARecord, item: Item, config: FeedbackConfig, memory_ref: int) -> FeedbackRecord:
    question = item.qas[record.question_index]
    if config.mode is FeedbackMode.question_only:
        return FeedbackRecord(question=question.query, question_index=record.question_index, memory_ref=memory_ref)
    return FeedbackRecord(
        question=question.query,
        question_index=record.question_index,
        choices=[f"({letter(i)}) {choice.answer}" for i, choice in enumerate(question.answer_choices)],
        agent_choice=_chosen_letter(record, config.amemgym_letter_bug),
        ground_truth=letter(record.gold - 1) if config.with_ground_truth and record.gold is not None else None,
        correct=record.correct if config.with_ground_truth else None,
        memory_ref=memory_ref,
    )


def exposed_state_updates(item: Item, period: int) -> dict[str, str]:
    """The values this period's sessions revealed, later sessions overriding earlier ones."""
    merged: dict[str, str] = {}
    for session in item.periods[period].sessions:
        merged.update(session.exposed_states)
    return merged


def build_feedback(period_result: PeriodResult, item: Item, config: FeedbackConfig) -> PeriodFeedback:
    """Feedback records for one period in the configured mode (no records in mode ``none``)."""
    memories: list[str] = []
    records = []
    if config.mode is not FeedbackMode.none:
        for qa in sorted(period_result.qa, key=lambda r: r.question_index):
            memory = period_result.consulted_memory(qa)
            if memory not in memories:
                memories.append(memory)
            records.append(_record(qa, item, config, memories.index(memory)))
    return PeriodFeedback(
        user_id=period_result.user_id,
        period=period_result.period,
        mode=config.mode,
        records=records,
        memories=memories,
        exposed_state_updates=(
            exposed_state_updates(item, period_result.period)
            if config.with_exposed_states and config.mode is not FeedbackMode.none
            else None
        ),
    )


def render_feedback(feedback: PeriodFeedback, fmt: Literal["text", "json"] = "text") -> str:
    """The feedback as a proposer reads it: plain text, or JSON without empty fields."""
    if fmt == "json":
        return json.dumps(feedback.model_dump(mode="json", exclude_none=True), ensure_ascii=False, indent=2)
    if not feedback.records:
        return "No feedback."
    lines = []
    for number, text in enumerate(feedback.memories, start=1):
        lines += [f"[Memory {number}]", text or "(empty)", ""]
    for number, record in enumerate(feedback.records, start=1):
        shown = number if record.question_index is None else record.question_index + 1
        lines.append(f"Question {shown}: {record.question}")
        lines += record.choices or []
        if record.agent_choice is not None:
            lines.append(f"Assistant's answer: {record.agent_choice}")
        if record.ground_truth is not None:
            outcome = (
                "" if record.correct is None else (" (answered correctly)" if record.correct else " (answered wrongly)")
            )
            lines.append(f"Correct answer: {record.ground_truth}{outcome}")
        if record.memory_ref is not None:
            lines.append(f"Memory consulted: [Memory {record.memory_ref + 1}]")
        lines.append("")
    if feedback.exposed_state_updates is not None:
        lines.append("User information updates this period:")
        lines += [f"- {key}: {value}" for key, value in feedback.exposed_state_updates.items()]
    return "\n".join(lines).rstrip() + "\n"
