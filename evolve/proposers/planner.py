"""A generation's plan: the parent's evidence rendered, the proposers' variants, Optuna's hyperparameters for each.

The plan is saved before any of its candidates is evaluated, and the number of the generation's first trial before
its proposals (``trials.json``): a process killed before the plan was saved leaves trials that the resumed one hands
out again (same numbers, no failed trial). A proposal that repeats a known policy (any candidate the run planned:
kept, rejected or never run, under every strategy) is not planned: the proposers are asked for new samples instead
(``strategy.resamples``), so no policy is evaluated in two generations.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memevo.agents.base import ComponentSpec
from memevo.core.atomic_files import write_json_atomic
from memevo.core.run_files import delete_and_resume, read_json
from memevo.environments.protocol import Environment
from memevo.evolve.candidates import Candidate
from memevo.evolve.config import EvolveConfig
from memevo.evolve.decisions import race_verdicts
from memevo.evolve.evaluation import Evaluator
from memevo.evolve.evidence import evidence_from_episodes, render_evidence
from memevo.evolve.proposers import ProposalContext, Proposer, propose_all
from memevo.evolve.records import GenerationPlan, Instance, ProposalStats, read_record, write_record
from memevo.evolve.validation import LengthBounds

if TYPE_CHECKING:
    from memevo.evolve.tuner import Tuner

log = logging.getLogger("memevo.evolve")


def raced_gains(gen_dir: Callable[[int], Path], generation: int) -> dict[str, float]:
    """Per candidate raced before ``generation``, its mean gain over its parent at its race's last look (the race
    records; none under a strategy that keeps none)."""
    return {cid: verdict.mean_gain for earlier in range(1, generation)
            for cid, verdict in race_verdicts(gen_dir(earlier)).items()}


class Planner:
    """Writes each generation's plan (see the module docstring)."""

    def __init__(self, config: EvolveConfig, gen_dir: Callable[[int], Path], *, evaluator: Evaluator, environment: Environment[Any],
                 items: dict[str, Any], train_users: list[str], components: Sequence[ComponentSpec], bounds: LengthBounds,
                 tuner: Callable[[], Tuner], proposers: Callable[[], list[Proposer]]) -> None:
        self.config = config
        self._gen_dir = gen_dir
        """The folder of a generation's records."""
        self.evaluator = evaluator
        self.environment = environment
        self.items = items
        self.train_users = train_users
        self.components = components
        self.bounds = bounds
        self.tuner = tuner
        self.proposers = proposers

    def started_path(self, generation: int) -> Path:
        """Written when the generation starts: it also says the generation passed its budget check."""
        return self._gen_dir(generation) / "trials.json"

    def stored(self, generation: int) -> GenerationPlan | None:
        return read_record(self._gen_dir(generation) / "plan.json", GenerationPlan)

    def first_trial(self, generation: int) -> int:
        """The number of the generation's first trial, saved when the generation starts (before its proposals)."""
        path = self.started_path(generation)
        if not path.exists():
            write_json_atomic(path, {"first_trial": self.tuner().next_number()})
        remedy = delete_and_resume("it", "the generation's trials are then numbered from the study's next one")
        return int(read_json(path, remedy=remedy)["first_trial"])

    async def plan(self, generation: int, parent: Candidate, first_trial: int, *, pool: Sequence[Candidate],
                   val_instances: dict[str, dict[Instance, float]], lineage: dict[str, Candidate]) -> GenerationPlan:
        """The plan from the parent's train episodes (its evidence), saved; ``lineage``: every candidate so far."""
        episodes = self.evaluator.episodes(parent.id, "train", self.train_users, traces=True)
        evidence = render_evidence(evidence_from_episodes(episodes, self.items, self.config.feedback, self.environment),
                                   self.config.evidence_max_tokens)
        context = ProposalContext(
            generation=generation, parent=parent, evidence=evidence, task=self.config.task, bounds=self.bounds,
            components=self.components, pool=tuple(pool), val_instances=val_instances, lineage=lineage,
            raced=raced_gains(self._gen_dir, generation),
        )
        self.tuner().reuse_from(first_trial)
        candidates, stats = await self._candidates(context)
        plan = GenerationPlan(generation=generation, parent_id=parent.id, feedback=evidence,
                              candidates=candidates, stats=stats)
        write_record(self._gen_dir(generation) / "plan.json", plan)
        return plan

    async def _candidates(self, context: ProposalContext) -> tuple[list[Candidate], ProposalStats]:
        """The generation's K candidates: the proposers' variants with Optuna's hyperparameters. A candidate whose
        policy is already known (any candidate of the lineage, an earlier proposal, another proposer's same text)
        would waste its slot: the proposers are asked again for that many new samples, at most ``strategy.resamples``
        times; then the generation has fewer candidates (logged)."""
        parent, wanted = context.parent, self.config.budget.candidates
        candidates: list[Candidate] = []
        stats = ProposalStats()
        seen = set(context.lineage)
        resamples, drawn = self.config.strategy.resamples, Counter[int]()
        for attempt in range(resamples + 1):
            variants, made = await propose_all(self.proposers(), context, wanted, drawn)
            stats.add(made)
            repeated = 0
            for variant in variants:
                if not variant.prompts and not self.config.hyperparameters:
                    continue
                number, params = self.tuner().ask()
                policy = parent.policy.with_prompts(**variant.prompts).with_hyperparameters(**params)
                if policy.policy_id in seen:
                    self.tuner().repeated(number)
                    repeated += 1
                    continue
                seen.add(policy.policy_id)
                changed = bool(variant.prompts)
                candidate = Candidate(
                    policy=policy, parent_id=parent.id, generation=context.generation, index=len(candidates),
                    origin="proposal" if changed else "tuning", changes=variant.changes, trial_number=number,
                    proposer=variant.proposer if changed else None,
                    other_parent_id=variant.other_parent_id if changed else None,
                )
                self.tuner().annotate(number, candidate_id=candidate.id)
                candidates.append(candidate)
            stats.duplicates += repeated
            if not repeated:
                break
            if attempt == resamples:
                log.info("gen %d: %d proposal(s) still repeated a known policy after %d new tries: %d candidate(s) "
                         "instead of %d", context.generation, repeated, resamples, len(candidates),
                         self.config.budget.candidates)
                break
            log.info("gen %d: %d proposal(s) repeated a known policy; asking for %d new one(s)", context.generation,
                     repeated, repeated)
            wanted = repeated
        return candidates, stats
