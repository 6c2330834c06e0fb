"""System prompts the agents answer with: the memory text goes into ``{memories}``; ``{today}`` (the simulated date
of the message or question) may be used, the defaults do not (AMemGym's prompts had no date)."""

from __future__ import annotations

from memevo.agents.base import ComponentSpec

ANSWER_PLACEHOLDERS = frozenset({"memories", "today"})

NO_MEMORIES = "(nothing stored yet)"

_IN_CONTEXT_ANSWER = """\
You are a friendly, capable assistant who has talked with this user before. Below is everything you \
have noted about them, oldest note first. Let these notes shape your reply: prefer what the newest \
note says when notes disagree, and do not ask for details you already know.

Your notes about the user:
{memories}"""

_RETRIEVED_ANSWER = """\
You are a friendly, capable assistant who has talked with this user before. The snippets below were \
looked up in your long-term memory because they may bear on the current message; they are listed \
oldest first. Use the relevant ones to tailor your reply and trust the newest when they disagree.

Memory snippets:
{memories}"""


def answer_component(in_context: bool) -> ComponentSpec:
    """The ``answer_system_prompt`` component: all notes (AWI) or retrieved snippets (RAG, AWE)."""
    return ComponentSpec(
        name="answer_system_prompt",
        description=(
            "System message for every reply and every evaluation answer; {memories} receives "
            + ("all memory entries as '- label: value' lines." if in_context else "the retrieved memories as '- text' lines.")
            + " Optional {today}: the simulated date."
        ),
        default=_IN_CONTEXT_ANSWER if in_context else _RETRIEVED_ANSWER,
        required_placeholders=("memories",),
        optional_placeholders=("today",),
    )


NATIVE_SYSTEM = ComponentSpec(
    name="system_prompt",
    description="Optional system message before the whole conversation (empty: none, as in AMemGym).",
    default="",
)
