"""Every proposed component text is checked before it can become a candidate.

Mechanical faults are repaired the way AMemGym does (G.4: re-append a missing placeholder block, a
missing output-format clause); anything else rejects the proposal with a reason that is counted. A proposal that is
not prose is rejected, judged on its own text, since the repair's prose would pass it off as a prompt.
Nothing here raises on bad model output: a bad proposal is data, not an error.
"""

from __future__ import annotations

from memevo.agents.base import ComponentSpec
from memevo.agents.templates import placeholders_in, prompt_problems
from memevo.core.lazy_model import LazyModel


class Verdict(LazyModel):
    """The outcome of validating one proposal: the (possibly repaired) text or a rejection reason."""

    accepted: bool
    text: str | None = None
    repairs: list[str] = []
    reason: str | None = None


class LengthBounds(LazyModel):
    """A proposal's length relative to its parent's; the floor also stops empty replies."""

    min_ratio: float = 0.3
    max_ratio: float = 4.0
    min_chars: int = 20

    def problem(self, text: str, parent: str) -> str | None:
        low = max(self.min_chars, int(self.min_ratio * len(parent))) if parent else self.min_chars
        high = max(low, int(self.max_ratio * max(len(parent), self.min_chars)))
        if len(text) < low:
            return f"too short ({len(text)} < {low} chars)"
        if len(text) > high:
            return f"too long ({len(text)} > {high} chars)"
        return None


MIN_LETTER_SHARE = 0.6
"""Letters among a prompt's visible characters: English prose has about 0.8, the garbage a 135M proposer wrote
(``#1,20083927 #46.5F.BETA``) well under half."""


def prose_problem(text: str) -> str | None:
    """Why ``text`` (a proposal as written: the repair's own prose must not pass it) is not a prompt, or None."""
    visible = "".join(text.split())
    letters = sum(character.isalpha() for character in visible)
    if letters < MIN_LETTER_SHARE * len(visible):
        return f"not a prompt (letters are {letters / len(visible):.0%} of its characters, under {MIN_LETTER_SHARE:.0%})"
    return None


def _normalized(text: str) -> str:
    return " ".join(text.split())


def _repair(spec: ComponentSpec, text: str) -> tuple[str, list[str]]:
    repairs: list[str] = []
    for name in spec.required_placeholders:
        if name not in placeholders_in(text):
            title = name.replace("_", " ").capitalize()
            text = f"{text.rstrip()}\n\n{title}:\n{{{name}}}\n"
            repairs.append(f"re-appended {{{name}}}")
    if spec.output_format_clause and spec.output_format_clause not in text:
        text = f"{text.rstrip()}\n\n{spec.output_format_clause}\n"
        repairs.append("re-appended the output-format clause")
    return text, repairs


def validate_proposal(spec: ComponentSpec, proposal: str | None, parent: str, bounds: LengthBounds) -> Verdict:
    """Accept, repair-and-accept, or reject ``proposal`` as the new text of component ``spec``."""
    if proposal is None or not proposal.strip():
        return Verdict(accepted=False, reason="empty or unparsable proposal")
    text, repairs = _repair(spec, proposal.strip("\n"))
    remaining = prompt_problems(spec, text)
    if remaining:
        return Verdict(accepted=False, reason="; ".join(remaining), repairs=repairs)
    length = bounds.problem(text, parent)
    if length:
        return Verdict(accepted=False, reason=length, repairs=repairs)
    if _normalized(text) == _normalized(parent):
        return Verdict(accepted=False, reason="identical to the parent", repairs=repairs)
    garbage = prose_problem(proposal)
    if garbage:
        return Verdict(accepted=False, reason=garbage, repairs=repairs)
    return Verdict(accepted=True, text=text, repairs=repairs)
