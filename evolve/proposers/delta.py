"""The delta proposer: small edits (add, rewrite or remove one line) instead of a whole new text.

Long evolved prompts drift when an LM rewrites them whole; editing single lines keeps what works (the
idea of ACE's incremental playbook updates). The LM returns edits in a fixed form; edits that do not
parse or point at no line are skipped and counted as the proposal's changes are.
"""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING, Any

import dspy

from memevo.agents.base import ComponentSpec
from memevo.evolve.proposers.base import ProposalContext, Variant, checked
from memevo.evolve.proposers.reflection import DSPyCaller, as_changes
from memevo.evolve.proposers.signatures import EditRules
from memevo.evolve.records import ProposalStats

if TYPE_CHECKING:
    from memevo.evolve.proposers import ProposerSettings

EDIT = re.compile(r"^\s*(ADD|REWRITE|REMOVE)\s*(\d+)?\s*:?\s*(.*)$", re.IGNORECASE | re.DOTALL)


def numbered(text: str) -> str:
    return "\n".join(f"{number}. {line}" for number, line in enumerate(text.splitlines(), start=1))


def apply_edits(text: str, edits: list[str]) -> tuple[str, list[str]]:
    """The text with the edits applied (line numbers refer to the original text) and the ones applied."""
    lines: list[str | None] = list(text.splitlines())
    added: list[str] = []
    applied: list[str] = []
    for edit in edits:
        match = EDIT.match(edit)
        if match is None:
            continue
        op, number, body = match.group(1).upper(), match.group(2), match.group(3).strip()
        if op == "ADD" and body:
            added.append(body)
        elif op in ("REWRITE", "REMOVE") and number and 1 <= int(number) <= len(lines):
            lines[int(number) - 1] = body if op == "REWRITE" and body else None
        else:
            continue
        applied.append(edit.strip())
    kept = [line for line in lines if line is not None]
    return "\n".join(kept + added), applied


class DeltaProposer:
    """Proposes ``n`` edited versions of every evolving component per call."""

    name = "delta"

    def __init__(self, settings: ProposerSettings) -> None:
        self.caller = DSPyCaller(settings.lm, settings.adapter)
        self.edit = dspy.Predict(EditRules)

    async def _edits(
        self, spec: ComponentSpec, current: str, context: ProposalContext, sample: int
    ) -> list[str] | None:
        async def run(config: dict[str, Any]) -> Any:
            return await self.edit.acall(
                task=context.task,
                component=f"{spec.name}: {spec.description}",
                numbered_lines=numbered(current),
                feedback=context.evidence,
                config=config,
            )

        result, error = await self.caller.call(spec.name, run, sample, context.generation)
        return None if error is not None else as_changes(result.edits)

    async def propose(self, context: ProposalContext, n: int) -> tuple[list[Variant], ProposalStats]:
        stats = ProposalStats()
        variants = [Variant(prompts={}, proposer=self.name) for _ in range(n)]
        for spec in context.components:
            current = context.current(spec)
            samples = await asyncio.gather(*(self._edits(spec, current, context, i) for i in context.samples(n)))
            for index, edits in enumerate(samples):
                new, applied = apply_edits(current, edits) if edits else (None, [])
                text, repairs = checked(spec, new if applied else None, current, context.bounds, stats)
                if text is not None:
                    variants[index].prompts[spec.name] = text
                    variants[index].changes += [f"{spec.name}: {edit}" for edit in applied] + repairs
        return variants, stats
