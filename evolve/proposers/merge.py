"""The merge proposer: candidates from the components of two pool candidates, without an LM call.

The second parent is a pool candidate that beats the parent on some validation instances (one whose strengths
the parent lacks): the first sample takes the one that beats it on the most, each later sample the next. Per
component, a side that kept the common ancestor's text gives way to the side that changed it (GEPA's merge
rule); where both changed it, the parent's lines come first and the other's new lines are appended, which
suits list-like components such as memory types.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memevo.evolve.candidates import Candidate
from memevo.evolve.proposers.base import ProposalContext, Variant, variant_of
from memevo.evolve.records import ProposalStats

if TYPE_CHECKING:
    from memevo.evolve.proposers import ProposerSettings


def ancestors(candidate: Candidate, lineage: dict[str, Candidate]) -> list[str]:
    """Ids from the candidate up to the seed."""
    chain = [candidate.id]
    while candidate.parent_id is not None and candidate.parent_id in lineage:
        candidate = lineage[candidate.parent_id]
        chain.append(candidate.id)
    return chain


def merge_text(parent: str, other: str, ancestor: str) -> str:
    if other in (ancestor, parent):
        return parent
    if parent == ancestor:
        return other
    lines = parent.splitlines()
    return "\n".join(lines + [line for line in other.splitlines() if line.strip() and line not in lines])


def partners(context: ProposalContext) -> list[Candidate]:
    """The pool candidates that beat the parent on some validation instances, most such wins first (equal wins in
    pool order): the same order for the same pool, so a resumed run merges the same pairs."""
    mine = context.val_instances.get(context.parent.id, {})
    wins: dict[str, int] = {}
    for candidate in context.pool:
        if candidate.id != context.parent.id:
            theirs = context.val_instances.get(candidate.id, {})
            wins[candidate.id] = sum(1 for key, value in theirs.items() if key in mine and value > mine[key])
    return sorted((c for c in context.pool if wins.get(c.id)), key=lambda c: -wins[c.id])


class MergeProposer:
    """Proposes one merge per sample: sample ``i`` merges the parent with its ``i``-th partner (``partners``), so a
    merge asked for again (its first repeated a known policy) takes the next partner; none while the pool holds
    no partner."""

    name = "merge"

    def __init__(self, settings: ProposerSettings) -> None:
        del settings  # a merge needs no LM

    def _merge(self, context: ProposalContext, partner: Candidate, stats: ProposalStats) -> Variant | None:
        lineage = dict(context.lineage)
        theirs = set(ancestors(partner, lineage))
        common = next((i for i in ancestors(context.parent, lineage) if i in theirs), None)
        ancestor = lineage.get(common or "", context.parent)
        merged = {spec.name: merge_text(context.current(spec), context.current(spec, partner),
                                        context.current(spec, ancestor)) for spec in context.components}
        return variant_of(context, merged, stats, proposer=self.name, change=f"merged with {partner.label}",
                          other_parent_id=partner.id)

    async def propose(self, context: ProposalContext, n: int) -> tuple[list[Variant], ProposalStats]:
        stats = ProposalStats()
        ranked = partners(context)
        merged = [self._merge(context, ranked[i], stats) for i in context.samples(n) if i < len(ranked)]
        return [variant for variant in merged if variant is not None], stats
