"""The reflection proposer: a DSPy LM reads a component and the evidence and rewrites the component.

A parse failure or an empty field becomes a ``Proposal`` with ``error`` set, validated and counted like
any other. An endpoint that fails after its retries (``LLMError``) is no verdict on a proposal: it ends the
run (exit 1) before the generation's plan is saved, so ``--resume`` asks again. Small local models rarely follow DSPy's field markers, so the chat adapter (with
DSPy's built-in JSON fallback) is the default and the JSON adapter can be chosen instead.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal

import dspy

from memevo.agents.base import ComponentSpec
from memevo.agents.llm.protocol import LLMError, LLMJSONError
from memevo.core.lazy_model import LazyModel
from memevo.evolve.proposers.base import ProposalContext, Variant, checked, proposal_error_line
from memevo.evolve.proposers.signatures import RewritePrompt, RewriteTypes
from memevo.evolve.records import ProposalStats

if TYPE_CHECKING:
    from memevo.evolve.proposers import ProposerSettings

log = logging.getLogger(__name__)
ROLLOUTS_PER_GENERATION = 100


class Proposal(LazyModel):
    """One raw proposal for one component (not yet validated)."""

    component: str
    text: str | None = None
    changes: list[str] = []
    error: str | None = None


def is_section(spec: ComponentSpec) -> bool:
    """A component without placeholders or a format clause is a bare section (e.g. the types list)."""
    return not spec.required_placeholders and spec.output_format_clause is None


def as_changes(value: object) -> list[str]:
    if isinstance(value, list):
        return [str(item) for item in value][:20]
    return [line.strip("-* ") for line in str(value or "").splitlines() if line.strip()][:20]


def endpoint_failure(error: BaseException) -> LLMError | None:
    """The ``LLMError`` behind a DSPy error (DSPy wraps it), unless it is a reply that was not JSON."""
    seen: BaseException | None = error
    visited: set[int] = set()
    while seen is not None and id(seen) not in visited:
        if isinstance(seen, LLMError) and not isinstance(seen, LLMJSONError):
            return seen
        visited.add(id(seen))
        seen = seen.__cause__ or seen.__context__
    return None


class DSPyCaller:
    """Calls one DSPy predictor under the proposer's LM and adapter; failures become ``error`` strings."""

    def __init__(self, lm: dspy.BaseLM, adapter: Literal["chat", "json"]) -> None:
        self.lm = lm
        self.adapter = dspy.JSONAdapter() if adapter == "json" else dspy.ChatAdapter()

    async def call(
        self, name: str, run: Callable[[dict[str, Any]], Awaitable[Any]], sample: int, generation: int = 0
    ) -> tuple[Any, str | None]:
        """``run(config)`` under this LM. Sample 0 is the LM's default (greedy) answer; samples 1.. use
        temperature 1 and rollout ids distinct per generation, so a generation that proposes from the
        same parent and evidence as the one before it draws new samples instead of cached repeats."""
        config = {"rollout_id": generation * ROLLOUTS_PER_GENERATION + sample, "temperature": 1.0} if sample else {}
        try:
            with dspy.context(lm=self.lm, adapter=self.adapter):
                return await run(config), None
        except asyncio.CancelledError:
            raise
        except Exception as error:  # noqa: BLE001 - any model or parse failure is a rejected proposal
            failure = endpoint_failure(error)
            if failure is not None:
                raise failure from error
            log.info("proposal for %s failed: %s", name, proposal_error_line(error))
            return None, f"{type(error).__name__}: {str(error)[:300]}"


class ReflectionProposer:
    """Proposes ``n`` rewrites of every evolving component per call (sample i of each forms variant i)."""

    name = "reflection"

    def __init__(self, settings: ProposerSettings) -> None:
        self.caller = DSPyCaller(settings.lm, settings.adapter)
        self.rewrite_prompt = dspy.Predict(RewritePrompt)
        self.rewrite_types = dspy.Predict(RewriteTypes)

    async def _one(
        self, spec: ComponentSpec, current: str, feedback: str, task: str, sample: int, generation: int
    ) -> Proposal:
        if is_section(spec):

            async def run(config: dict[str, Any]) -> Any:
                return await self.rewrite_types.acall(
                    task=task, current_types=current, feedback=feedback, config=config
                )
        else:

            async def run(config: dict[str, Any]) -> Any:
                return await self.rewrite_prompt.acall(
                    task=task,
                    component=f"{spec.name}: {spec.description}",
                    current_text=current,
                    feedback=feedback,
                    config=config,
                )

        result, error = await self.caller.call(spec.name, run, sample, generation)
        if error is not None:
            return Proposal(component=spec.name, error=error)
        text = result.new_types if is_section(spec) else result.new_text
        return Proposal(
            component=spec.name, text=str(text) if text is not None else None, changes=as_changes(result.changes)
        )

    async def rewrites(
        self, spec: ComponentSpec, current: str, feedback: str, task: str, n: int, generation: int = 0, *,
        first_sample: int = 0,
    ) -> list[Proposal]:
        """``n`` raw proposals for one component (sample numbers from ``first_sample`` on)."""
        samples = (self._one(spec, current, feedback, task, first_sample + i, generation) for i in range(n))
        return list(await asyncio.gather(*samples))

    async def propose(self, context: ProposalContext, n: int) -> tuple[list[Variant], ProposalStats]:
        stats = ProposalStats()
        variants = [Variant(prompts={}, proposer=self.name) for _ in range(n)]
        for spec in context.components:
            current = context.current(spec)
            log.info("gen %d: the proposer writes %d rewrite(s) of %s from the feedback", context.generation, n,
                     spec.name)
            proposals = await self.rewrites(spec, current, context.evidence, context.task, n, context.generation,
                                            first_sample=context.first_sample)
            for index, proposal in enumerate(proposals):
                text, repairs = checked(spec, proposal.text, current, context.bounds, stats)
                if text is None:
                    log.info("gen %d reflection proposal %d for %s rejected", context.generation, index, spec.name)
                    continue
                variants[index].prompts[spec.name] = text
                variants[index].changes += [f"{spec.name}: {change}" for change in proposal.changes] + repairs
        return variants, stats
