"""GEPA as an arm of the strategy benchmark: ``gepa.optimize`` over memevo's evaluation and proposer.

The adapter lets GEPA's engine decide everything GEPA decides (Pareto parent, minibatch of 3 train users, strict
improvement on the minibatch, a full validation evaluation of accepted children, merges of two descendants of a
common ancestor (``use_merge=True``, GEPA's own merge settings otherwise), the best on validation) while
episodes are run and scored by memevo's ``Evaluator`` (a user is one GEPA data instance, its accuracy the score;
episodes already played are reused, as memevo's loop reuses them) and proposals come from memevo's reflection
proposer on memevo's evidence, so every arm sees the same edit distribution. GEPA asks for one proposal per
iteration; iteration i draws proposer sample i mod K (memevo's loop draws samples 0..K-1 per generation) and the
next samples when one is rejected. GEPA stops, like memevo's budget, once the calls spent reach ``max_calls``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import gepa
from gepa.core.adapter import EvaluationBatch

from memevo.agents.base import AgentSpec
from memevo.agents.policy import MemoryPolicy
from memevo.environments.amemgym.data.models import Item
from memevo.evolve.candidates import Candidate
from memevo.evolve.config import EvolveConfig
from memevo.evolve.evaluation import Evaluator
from memevo.evolve.evidence import evidence_from_episodes, render_evidence
from memevo.evolve.proposers import ProposalContext, Proposer
from memevo.evolve.validation import LengthBounds

RESAMPLES = 2
"""As memevo's ``strategy.resamples``: further samples asked for when a proposal was rejected."""


@dataclass
class MemevoAdapter:
    """``GEPAAdapter`` over memevo: ``evaluate`` runs users, ``propose_new_texts`` asks memevo's proposer."""

    config: EvolveConfig
    seed: MemoryPolicy
    spec: AgentSpec
    items: Mapping[str, Item]
    make_evaluator: Callable[[], Evaluator]
    proposer: Proposer
    train_users: set[str]
    samples_per_iteration: int
    iteration: int = 0
    evidence: dict[str, str] = field(default_factory=dict)

    def policy(self, candidate: Mapping[str, str]) -> MemoryPolicy:
        return self.seed.with_prompts(**candidate)

    def evaluate(self, batch: list[str], candidate: dict[str, str], capture_traces: bool = False) -> EvaluationBatch:
        evaluator = self.make_evaluator()  # one per call: each call runs its own event loop
        split = "train" if set(batch) <= self.train_users else "val"
        memevo_candidate = Candidate(policy=self.policy(candidate))
        result = asyncio.run(evaluator.evaluate(memevo_candidate, split, batch, label=f"gepa-{split}"))
        scores = {user.user_id: user.accuracy for user in result.users}
        trajectories = None
        if capture_traces:
            episodes = evaluator.episodes(memevo_candidate.id, split, batch, traces=True)
            rendered = render_evidence(evidence_from_episodes(episodes, dict(self.items), self.config.feedback),
                                       self.config.evidence_max_tokens)
            trajectories = [rendered] * len(batch)
        return EvaluationBatch(outputs=list(batch), scores=[scores[user] for user in batch], trajectories=trajectories)

    def make_reflective_dataset(self, candidate: dict[str, str], eval_batch: EvaluationBatch,
                                components_to_update: list[str]) -> Mapping[str, Sequence[Mapping[str, Any]]]:
        evidence = (eval_batch.trajectories or ["No feedback."])[0]
        return {name: [{"evidence": evidence}] for name in components_to_update}

    def propose_new_texts(self, candidate: dict[str, str], reflective_dataset: Mapping[str, Sequence[Mapping[str, Any]]],
                          components_to_update: list[str]) -> dict[str, str]:
        iteration, self.iteration = self.iteration, self.iteration + 1
        first = iteration % self.samples_per_iteration
        parent = Candidate(policy=self.policy(candidate), generation=iteration + 1)
        context = ProposalContext(
            generation=iteration + 1, parent=parent, evidence=str(reflective_dataset[components_to_update[0]][0]["evidence"]),
            components=[self.spec.component(name) for name in components_to_update], task=self.config.task,
            bounds=LengthBounds(min_ratio=self.config.min_length_ratio, max_ratio=self.config.max_length_ratio),
        )
        for attempt in range(RESAMPLES + 1):
            sample = first + attempt * self.samples_per_iteration
            variants, _ = asyncio.run(self.proposer.propose(replace(context, first_sample=sample), 1))
            if variants:
                return {**candidate, **variants[0].prompts}
        return dict(candidate)


class QuietLogger:
    """GEPA's iteration log goes nowhere (the benchmark prints its table on stdout)."""

    def log(self, message: str) -> None:
        del message


@dataclass
class GepaOutcome:
    best: MemoryPolicy
    policies: list[MemoryPolicy]
    parents: list[int | None]
    """Per candidate after the seed, the index of its (first) parent."""


def run_gepa(adapter: MemevoAdapter, components: Sequence[str], train: list[str], val: list[str],
             spent: Callable[[], int], max_calls: int, seed: int, run_dir: Path) -> GepaOutcome:
    """``gepa.optimize`` with GEPA's defaults (Pareto parents, minibatch 3, strict improvement) and its merge on,
    until ``spent()`` reaches ``max_calls``."""
    seed_candidate = {name: adapter.seed.prompts.get(name, adapter.spec.component(name).default) for name in components}
    result = gepa.optimize(
        seed_candidate=seed_candidate, trainset=train, valset=val, adapter=adapter,  # type: ignore[arg-type]
        stop_callbacks=lambda _state: spent() >= max_calls, seed=seed, run_dir=str(run_dir),
        display_progress_bar=False, raise_on_exception=True, logger=QuietLogger(), use_merge=True,
    )
    policies = [adapter.policy(candidate) for candidate in result.candidates]
    return GepaOutcome(best=adapter.policy(result.best_candidate), policies=policies,
                       parents=[(parents or [None])[0] for parents in result.parents])
