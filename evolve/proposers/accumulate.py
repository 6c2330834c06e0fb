"""The accumulate proposer: edits that showed a gain in a race, carried onto the parent, before new rewrites.

A race keeps at most one candidate per generation, and a candidate whose gain over its parent was positive but not
yet significant when its race ended is dropped with its edit. Every kept candidate then starts from one edit, so
helpful edits found on two branches never meet (issue 39). This proposer keeps them: a donor is a raced candidate
with a positive mean gain over its own parent (``ProposalContext.raced``) whose parent is the current parent or one
of its ancestors; its edit is the lines it added to and removed from its parent's text. The first samples apply
the donors' edits to the current parent (best gain first, then pairs of donors), skipping texts the run already
knows; the later samples are the inner proposer's (``reflection``), numbered from 0, so a run with no donor
proposes exactly what ``reflection`` does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import combinations
from typing import TYPE_CHECKING

from memevo.evolve.candidates import Candidate
from memevo.evolve.proposers.base import ProposalContext, Variant, variant_of
from memevo.evolve.proposers.merge import ancestors
from memevo.evolve.proposers.reflection import ReflectionProposer
from memevo.evolve.records import ProposalStats

if TYPE_CHECKING:
    from memevo.evolve.proposers import ProposerSettings


@dataclass(frozen=True)
class Edit:
    """What a donor changed in its parent's component texts: lines added and lines removed, per component."""

    donor: Candidate
    gain: float
    added: Mapping[str, tuple[str, ...]]
    removed: Mapping[str, frozenset[str]]


def line_edit(donor: Candidate, parent: Candidate, gain: float, components: Sequence[str],
              defaults: Mapping[str, str]) -> Edit:
    added: dict[str, tuple[str, ...]] = {}
    removed: dict[str, frozenset[str]] = {}
    for name in components:
        before = parent.policy.prompts.get(name, defaults[name]).splitlines()
        after = donor.policy.prompts.get(name, defaults[name]).splitlines()
        added[name] = tuple(line for line in after if line.strip() and line not in before)
        removed[name] = frozenset(line for line in before if line not in after)
    return Edit(donor=donor, gain=gain, added=added, removed=removed)


def apply(text: str, edits: Sequence[Edit], name: str) -> str:
    """The text without the lines the edits removed, then the lines they added that it lacks."""
    gone = frozenset().union(*(edit.removed[name] for edit in edits))
    lines = [line for line in text.splitlines() if line not in gone]
    for edit in edits:
        lines += [line for line in edit.added[name] if line not in lines]
    return "\n".join(lines)


def donors(context: ProposalContext) -> list[Edit]:
    """The donors' edits (see the module docstring), highest gain first (equal gains: in lineage order)."""
    lineage = dict(context.lineage)
    chain = ancestors(context.parent, lineage)
    names = [spec.name for spec in context.components]
    defaults = {spec.name: spec.default for spec in context.components}
    edits = [line_edit(candidate, lineage[candidate.parent_id], context.raced[candidate.id], names, defaults)
             for candidate in lineage.values()
             if context.raced.get(candidate.id, 0.0) > 0 and candidate.id not in chain
             and candidate.parent_id in chain and candidate.parent_id in lineage]
    return sorted(edits, key=lambda edit: -edit.gain)


class AccumulateProposer:
    """Donors' edits on the parent first, then the reflection proposer's rewrites (see the module docstring)."""

    name = "accumulate"

    def __init__(self, settings: ProposerSettings) -> None:
        self.inner = ReflectionProposer(settings)

    def combinations(self, context: ProposalContext) -> list[dict[str, str]]:
        """Component texts from the donors' edits (singles, then pairs, by gain), new to the run, each once."""
        edits = donors(context)
        groups = sorted([(edit,) for edit in edits] + list(combinations(edits, 2)),
                        key=lambda group: (len(group), -sum(edit.gain for edit in group)))
        known = {tuple(candidate.policy.prompts.get(spec.name, spec.default) for spec in context.components)
                 for candidate in context.lineage.values()}
        known.add(tuple(context.current(spec) for spec in context.components))
        texts: list[dict[str, str]] = []
        for group in groups:
            merged = {spec.name: apply(context.current(spec), group, spec.name) for spec in context.components}
            key = tuple(merged.values())
            if key not in known:
                known.add(key)
                texts.append(merged)
        return texts

    def _variant(self, context: ProposalContext, texts: dict[str, str], stats: ProposalStats) -> Variant | None:
        return variant_of(context, texts, stats, proposer=self.name, change="carried over an edit that gained in a race")

    async def propose(self, context: ProposalContext, n: int) -> tuple[list[Variant], ProposalStats]:
        stats = ProposalStats()
        texts = self.combinations(context)
        samples = context.samples(n)
        carried = [self._variant(context, texts[i], stats) for i in samples if i < len(texts)]
        variants = [variant for variant in carried if variant is not None]
        rewrites = [i for i in samples if i >= len(texts)]
        if rewrites:
            inner = replace(context, first_sample=rewrites[0] - len(texts))
            made, made_stats = await self.inner.propose(inner, len(rewrites))
            variants += made
            stats.add(made_stats)
        return variants, stats
