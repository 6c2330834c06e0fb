"""The proposer: asks a DSPy LM for revised component texts and never lets a bad reply escape.

A parse failure, an LM error or an empty field becomes a ``Proposal`` with ``error`` set; the caller
validates and counts. Small local models rarely follow DSPy's field markers, so the chat adapter
(with DSPy's built-in JSON fallback) is the default and the JSON adapter can be chosen instead.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Literal

import dspy
from pydantic import BaseModel, Field

from memevo.agents.base import ComponentSpec
from memevo.evolve.proposer.signatures import RewritePrompt, RewriteTypes

log = logging.getLogger(__name__)


class Proposal(BaseModel):
    """One raw proposal for one component (not yet validated)."""

    component: str
    text: str | None = None
    changes: list[str] = Field(default_factory=list)
    error: str | None = None


def is_section(spec: ComponentSpec) -> bool:
    """A component without placeholders or a format clause is a bare section (e.g. the types list)."""
    return not spec.required_placeholders and spec.output_format_clause is None


def _changes(value: object) -> list[str]:
    if isinstance(value, list):
        return [str(item) for item in value][:20]
    return [line.strip("-* ") for line in str(value or "").splitlines() if line.strip()][:20]


class Proposer:
    """Proposes ``n`` revisions of one component per call, through one DSPy LM."""

    def __init__(self, lm: dspy.BaseLM, *, adapter: Literal["chat", "json"] = "chat") -> None:
        self.lm = lm
        self.adapter = dspy.JSONAdapter() if adapter == "json" else dspy.ChatAdapter()
        self.rewrite_prompt = dspy.Predict(RewritePrompt)
        self.rewrite_types = dspy.Predict(RewriteTypes)

    async def _one(self, spec: ComponentSpec, current: str, feedback: str, task: str, sample: int) -> Proposal:
        config = {"rollout_id": sample, "temperature": 1.0} if sample else {}
        try:
            with dspy.context(lm=self.lm, adapter=self.adapter):
                if is_section(spec):
                    result = await self.rewrite_types.acall(
                        task=task, current_types=current, feedback=feedback, config=config
                    )
                    text = result.new_types
                else:
                    component = f"{spec.name}: {spec.description}"
                    result = await self.rewrite_prompt.acall(
                        task=task, component=component, current_text=current, feedback=feedback, config=config
                    )
                    text = result.new_text
        except asyncio.CancelledError:
            raise
        except Exception as error:  # noqa: BLE001 - any model or parse failure is a rejected proposal
            log.info("proposal for %s failed: %s", spec.name, error)
            return Proposal(component=spec.name, error=f"{type(error).__name__}: {str(error)[:300]}")
        return Proposal(component=spec.name, text=str(text) if text is not None else None, changes=_changes(result.changes))

    async def propose(self, spec: ComponentSpec, current: str, feedback: str, task: str, n: int) -> list[Proposal]:
        """``n`` proposals (samples 1.. use temperature 1 and distinct rollout ids so they differ)."""
        return list(await asyncio.gather(*(self._one(spec, current, feedback, task, i) for i in range(n))))
