"""The proposer protocol: from a parent, its evidence and the pool, propose new component texts.

A proposer returns validated ``Variant``s (only the components it changed) and counts every proposal it
made, accepted or not, in ``ProposalStats``. It never raises on bad model output: a bad proposal is data.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from pydantic import Field

from memevo.agents.base import ComponentSpec
from memevo.core.lazy_model import LazyModel
from memevo.evolve.candidates import Candidate
from memevo.evolve.records import Instance, ProposalStats
from memevo.evolve.validation import LengthBounds, validate_proposal


class Variant(LazyModel):
    """One proposed set of changed component texts (already validated)."""

    prompts: dict[str, str]
    changes: list[str] = []
    proposer: str
    other_parent_id: str | None = Field(None, description="The second parent of a merge.")


@dataclass(frozen=True)
class ProposalContext:
    """Everything a proposer may read for one generation."""

    generation: int
    parent: Candidate
    evidence: str
    components: Sequence[ComponentSpec]
    task: str
    bounds: LengthBounds
    pool: Sequence[Candidate] = ()
    """Accepted candidates so far (the seed first), for proposers that combine candidates."""
    val_instances: Mapping[str, Mapping[Instance, float]] = field(default_factory=dict)
    """Per pool candidate id, its objective per validation (user, period)."""
    lineage: Mapping[str, Candidate] = field(default_factory=dict)
    """Every known candidate by id, to walk parent links."""
    raced: Mapping[str, float] = field(default_factory=dict)
    """Per candidate raced in an earlier generation, its mean gain over its own parent at its race's last look."""
    first_sample: int = 0
    """The number of the proposer's first sample: proposals asked for again (their first answers repeated a known
    policy) start after those it already drew (``propose_all``), so they are new samples, not cached repeats."""

    def samples(self, n: int) -> range:
        """The sample numbers of ``n`` proposals (sample 0 is the LM's default answer)."""
        return range(self.first_sample, self.first_sample + n)

    def current(self, spec: ComponentSpec, candidate: Candidate | None = None) -> str:
        return (candidate or self.parent).policy.prompts.get(spec.name, spec.default)


class Proposer(Protocol):
    """Proposes up to ``n`` variants of the context's parent."""

    name: str

    async def propose(self, context: ProposalContext, n: int) -> tuple[list[Variant], ProposalStats]: ...


def checked(
    spec: ComponentSpec, text: str | None, current: str, bounds: LengthBounds, stats: ProposalStats
) -> tuple[str | None, list[str]]:
    """The validated (possibly repaired) text, or None; the verdict is counted in ``stats``."""
    verdict = validate_proposal(spec, text, current, bounds)
    stats.count(verdict)
    return (verdict.text if verdict.accepted else None), verdict.repairs


def variant_of(context: ProposalContext, texts: Mapping[str, str], stats: ProposalStats, *, proposer: str,
               change: str, other_parent_id: str | None = None) -> Variant | None:
    """The variant of the parent whose components read ``texts`` (a component left as it is is not proposed), each
    checked (``checked``) and noted as ``change``; None when no component changed and passed."""
    variant = Variant(prompts={}, proposer=proposer, other_parent_id=other_parent_id)
    for spec in context.components:
        current = context.current(spec)
        if texts[spec.name] == current:
            continue
        text, repairs = checked(spec, texts[spec.name], current, context.bounds, stats)
        if text is not None:
            variant.prompts[spec.name] = text
            variant.changes += [f"{spec.name}: {change}"] + repairs
    return variant if variant.prompts else None


def shares(k: int, n: int) -> list[int]:
    """K variants dealt to ``n`` proposers in turn."""
    return [k // n + (index < k % n) for index in range(n)]


async def propose_all(
    proposers: Sequence[Proposer], context: ProposalContext, k: int, drawn: Counter[int] | None = None
) -> tuple[list[Variant], ProposalStats]:
    """Up to ``k`` variants from the proposers in turn, and the counts of all their proposals.

    ``drawn``: the samples each proposer (by its place in ``proposers``) already drew for this context, updated
    here. When the proposers are asked again, each one's samples then follow its own earlier ones with no gap, so
    a proposer with few possible proposals (a merge per pool partner) reaches its next one."""
    drawn = Counter() if drawn is None else drawn
    stats = ProposalStats()
    variants: list[Variant] = []
    for place, (proposer, share) in enumerate(zip(proposers, shares(k, len(proposers)), strict=True)):
        if share:
            own = replace(context, first_sample=context.first_sample + drawn[place])
            made, made_stats = await proposer.propose(own, share)
            drawn[place] += share
            variants += made
            stats.add(made_stats)
    return variants, stats


def proposal_error_line(error: BaseException) -> str:
    """A proposer failure in one line: for an unreadable reply, which fields were missing, not the reply."""
    reply = getattr(error, "lm_response", None)
    signature = getattr(error, "signature", None)
    if reply is not None and signature is not None:
        expected = ", ".join(getattr(signature, "output_fields", {}) or {})
        adapter = getattr(error, "adapter_name", "the adapter")
        return f"{adapter} could not read the {len(str(reply))}-character reply (expected fields: {expected})"
    first = str(error).strip().splitlines()[0] if str(error).strip() else ""
    text = f"{type(error).__name__}: {first}" if first else type(error).__name__
    return text if len(text) <= 160 else text[:157] + "..."
