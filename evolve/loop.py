"""The evolution loop (``memevo evolve``): propose, tune, evaluate on train, select on validation, repeat.

Generation 0 evaluates the seed on train and validation users. Each later generation builds feedback
from the parent's train episodes, asks the proposer for K variants of the evolving components, lets
Optuna set each variant's hyperparameters, evaluates the candidates on train users concurrently
(pruning weak ones early), scores the survivors on validation users and keeps the best only if it
beats the parent there (elitism). At the end the seed and the best are scored on test users.

Everything is saved in the run folder as it finishes (the generation's plan before any evaluation,
each candidate's results, each generation's outcome), and the spend with it, so ``resume=True``
recomputes nothing finished and ends with the same result as an uninterrupted run.

Budgets are checked before each generation and before each candidate starts: once one is spent, the
run stops, and a generation's candidates that had not started are left out (the stop reason says so).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from memevo.agents.base import ComponentSpec
from memevo.agents.llm.accounting import UsageReport
from memevo.agents.policy import MemoryPolicy
from memevo.agents.registry import agent_spec
from memevo.environments.data.models import Item
from memevo.environments.feedback import build_feedback, render_feedback
from memevo.environments.metrics import Scores, UpperBoundTable, UserScores
from memevo.environments.records import EpisodeResult
from memevo.environments.score_text import extra_metrics
from memevo.environments.store import write_json_atomic
from memevo.evolve import runtime
from memevo.evolve.candidates import Candidate
from memevo.evolve.config import EvolveConfig
from memevo.evolve.evaluation import CandidateEval, PruneHook
from memevo.evolve.tracking import table_csv, unified_diff
from memevo.evolve.tuner import Tuner
from memevo.evolve.validation import Verdict, validate_proposal

log = logging.getLogger("memevo.evolve")


class ProposalStats(BaseModel):
    """How a generation's proposals fared in validation."""

    total: int = 0
    accepted: int = 0
    repaired: int = 0
    rejected: int = 0
    reasons: list[str] = Field(default_factory=list)

    def count(self, verdict: Verdict) -> None:
        self.total += 1
        self.repaired += bool(verdict.repairs) and verdict.accepted
        if verdict.accepted:
            self.accepted += 1
        else:
            self.rejected += 1
            self.reasons.append(verdict.reason or "rejected")


class GenerationPlan(BaseModel):
    """What a generation will evaluate, fixed before any evaluation so a resume reuses it."""

    generation: int
    parent_id: str
    feedback: str
    candidates: list[Candidate]
    stats: ProposalStats


class GenerationOutcome(BaseModel):
    generation: int
    parent_id: str
    kept_id: str
    accepted: bool
    train: dict[str, float]
    val: dict[str, float]
    pruned: list[str]
    parent_val: float
    stats: ProposalStats
    not_started: list[str] = Field(default_factory=list, description="Candidates left out: the budget was spent.")
    stop_reason: str | None = Field(None, description="Set when the budget ran out during this generation.")


class EvolutionResult(BaseModel):
    """The outcome of a run: seed and best candidates with their test scores, history and spend."""

    protocol: Literal["outer_loop", "amemgym_period"]
    seed: Candidate
    best: Candidate
    seed_scores: Scores
    best_scores: Scores
    seed_user_scores: list[UserScores]
    best_user_scores: list[UserScores]
    history: list[GenerationOutcome] = Field(default_factory=list)
    stop_reason: str
    usage: UsageReport


def _read(path: Path, model: type[BaseModel]) -> Any:
    return model.model_validate_json(path.read_text(encoding="utf-8")) if path.exists() else None


def _write(path: Path, record: BaseModel) -> None:
    write_json_atomic(path, json.loads(record.model_dump_json()))


def render_train_feedback(
    config: EvolveConfig, episodes: Sequence[EpisodeResult], items: dict[str, Item]
) -> str:
    """The parent's train-episode feedback in the configured mode, user by user, cut to the size limit."""
    blocks = []
    for episode in episodes:
        for period in episode.periods:
            feedback = build_feedback(period, items[episode.user_id], config.feedback)
            if feedback.records:
                blocks.append(f"## User {episode.user_id}, period {period.period}\n" + render_feedback(feedback))
    if not blocks:
        return "No feedback."
    text = ""
    for block in blocks:
        if len(text) + len(block) > config.feedback_max_chars:
            break
        text += block + "\n"
    return text or blocks[0][: config.feedback_max_chars]


class OuterLoop(runtime.RunBase):
    """One evolution run over generations (see the module docstring)."""

    def __init__(self, config: EvolveConfig, run_dir: Path, hub: runtime.Hub, *, resume: bool) -> None:
        super().__init__(config, run_dir, hub, resume=resume)
        self.spec = agent_spec(self.seed.policy.kind)
        self.tuner = Tuner(
            config.optuna,
            dict(config.hyperparameters),
            storage=config.optuna.storage or f"sqlite:///{(run_dir / 'optuna.db').resolve()}",
            study_name=config.name,
            first_trial={name: getattr(self.seed.policy, name) for name in config.hyperparameters},
        )
        self.candidates: dict[str, Candidate] = {self.seed.id: self.seed}
        self.upper_bound: UpperBoundTable | None = None

    def _gen_dir(self, generation: int) -> Path:
        return self.run_dir / "generations" / f"gen_{generation:03d}"

    # ----- evaluation ---------------------------------------------------------------------------

    async def _evaluate(self, candidate: Candidate, split: str, *, trial: int | None) -> CandidateEval:
        user_ids = getattr(self.split, split)
        prune = PruneHook(self.tuner, trial) if trial is not None and split == "train" else None

        def progress(outcome: Any) -> None:
            log.info("gen %d %s %s user %s: accuracy %.3f", candidate.generation, candidate.label, split,
                     outcome.user_id, outcome.accuracy)

        result = await self.evaluator.evaluate(candidate, split, user_ids, prune=prune, on_user=progress)
        log.info("gen %d %s %s: score %.3f%s (spend so far: %d calls)", candidate.generation, candidate.label, split,
                 result.score, " PRUNED" if result.pruned else "", self.spend.total().total().calls)
        return result

    async def _train_then_val(self, candidate: Candidate) -> tuple[CandidateEval, CandidateEval | None]:
        """Train users (reporting to the candidate's trial, so it can be pruned), then validation users."""
        train = await self._evaluate(candidate, "train", trial=candidate.trial_number)
        if train.pruned:
            return train, None
        return train, await self._evaluate(candidate, "val", trial=None)

    # ----- proposals ----------------------------------------------------------------------------

    def _component(self, name: str) -> ComponentSpec:
        return self.spec.component(name)

    async def _plan(self, generation: int, parent: Candidate) -> GenerationPlan:
        path = self._gen_dir(generation) / "plan.json"
        stored = _read(path, GenerationPlan)
        if stored is not None:
            return stored
        episodes = self.evaluator.episodes(parent.id, "train", self.split.train)
        feedback = render_train_feedback(self.config, episodes, self.items)
        k = self.config.budget.candidates
        stats = ProposalStats()
        variants: list[dict[str, str]] = [{} for _ in range(k)]
        changes: list[list[str]] = [[] for _ in range(k)]
        for name in self.config.components:
            spec = self._component(name)
            current = parent.policy.prompts.get(name, spec.default)
            proposals = await self.proposer.propose(spec, current, feedback, self.config.task, k)
            for index, proposal in enumerate(proposals):
                verdict = validate_proposal(spec, proposal.text, current, self.bounds)
                stats.count(verdict)
                if verdict.accepted and verdict.text is not None:
                    variants[index][name] = verdict.text
                    changes[index] += [f"{name}: {change}" for change in proposal.changes] + verdict.repairs
                else:
                    log.info("gen %d proposal %d for %s rejected: %s", generation, index, name,
                             verdict.reason or proposal.error)
        self.tuner.begin_generation(generation)
        candidates: list[Candidate] = []
        seen = {parent.id}
        for index, prompts in enumerate(variants):
            if not prompts and not self.config.hyperparameters:
                continue
            number, params = self.tuner.ask()
            policy: MemoryPolicy = parent.policy.with_prompts(**prompts).with_hyperparameters(**params)
            if policy.policy_id in seen:
                self.tuner.tell(number, None, pruned=True)
                continue
            seen.add(policy.policy_id)
            candidates.append(Candidate(
                policy=policy, parent_id=parent.id, generation=generation, index=len(candidates),
                origin="proposal" if prompts else "tuning", changes=changes[index], trial_number=number,
            ))
        plan = GenerationPlan(generation=generation, parent_id=parent.id, feedback=feedback,
                              candidates=candidates, stats=stats)
        _write(path, plan)
        self.spend.save()
        return plan

    # ----- generations --------------------------------------------------------------------------

    async def _generation_zero(self) -> GenerationOutcome:
        path = self._gen_dir(0) / "outcome.json"
        stored = _read(path, GenerationOutcome)
        if stored is not None:
            return stored
        number = self.tuner.seed_trial()
        seed = self.seed.model_copy(update={"trial_number": number})
        self.tuner.fail_orphans([number])
        train, val = await self._train_then_val(seed)
        self.tuner.tell(number, train.score)
        outcome = GenerationOutcome(
            generation=0, parent_id=seed.id, kept_id=seed.id, accepted=True,
            train={seed.id: train.score}, val={seed.id: val.score if val else train.score}, pruned=[],
            parent_val=val.score if val else train.score, stats=ProposalStats(),
        )
        await self._log_generation(outcome, [seed], {seed.id: (train, val)}, feedback="")
        _write(path, outcome)
        self.spend.save()
        return outcome

    async def _generation(self, generation: int, parent: Candidate, parent_val: float) -> GenerationOutcome:
        path = self._gen_dir(generation) / "outcome.json"
        stored = _read(path, GenerationOutcome)
        if stored is not None:
            return stored
        plan = await self._plan(generation, parent)
        self.tuner.fail_orphans(
            [c.trial_number for c in plan.candidates if c.trial_number is not None]
        )
        log.info("generation %d: %d candidate(s) from %d proposal(s) (%d rejected, %d repaired)", generation,
                 len(plan.candidates), plan.stats.total, plan.stats.rejected, plan.stats.repaired)
        semaphore = asyncio.Semaphore(self.config.episode.candidate_concurrency)
        budget_stop: list[str] = []

        async def run(candidate: Candidate) -> tuple[CandidateEval, CandidateEval | None] | None:
            async with semaphore:
                # A candidate started by a killed process was allowed to start: it continues.
                exceeded = None if self.evaluator.started(candidate.id) else self.spend.exceeded(self.config)
                if exceeded:
                    budget_stop.append(exceeded)
                    return None
                return await self._train_then_val(candidate)

        gathered = await asyncio.gather(*(run(candidate) for candidate in plan.candidates))
        not_started = [c for c, result in zip(plan.candidates, gathered, strict=True) if result is None]
        for candidate in not_started:
            assert candidate.trial_number is not None
            self.tuner.tell(candidate.trial_number, None, pruned=True)
        ran = [(c, result) for c, result in zip(plan.candidates, gathered, strict=True) if result is not None]
        evals = {c.id: result for c, result in ran}
        for candidate, (train, _) in ran:
            assert candidate.trial_number is not None
            self.tuner.tell(candidate.trial_number, train.score, pruned=train.pruned)
        survivors = [(c, train, val) for c, (train, val) in ran if not train.pruned]
        kept, accepted, kept_val = parent, False, parent_val
        if survivors:
            best, best_train, best_val = max(
                survivors, key=lambda row: ((row[2] or row[1]).score, row[1].score, -row[0].index)
            )
            score = (best_val or best_train).score
            if score > parent_val:
                kept, accepted, kept_val = best, True, score
        stop = None
        if not_started:
            stop = (f"{budget_stop[0]}: {len(not_started)} of {len(plan.candidates)} candidate(s) of "
                    f"generation {generation} not started")
        outcome = GenerationOutcome(
            generation=generation, parent_id=parent.id, kept_id=kept.id, accepted=accepted,
            train={c.id: t.score for c, (t, _) in ran},
            val={c.id: v.score for c, (_, v) in ran if v is not None},
            pruned=[c.id for c, (t, _) in ran if t.pruned],
            parent_val=kept_val, stats=plan.stats, not_started=[c.id for c in not_started], stop_reason=stop,
        )
        await self._log_generation(outcome, [c for c, _ in ran], evals, feedback=plan.feedback)
        _write(path, outcome)
        self.spend.save()
        log.info("generation %d: %s (kept %s, validation %.3f)", generation,
                 "improved" if accepted else "no improvement", kept.id[:8], kept_val)
        return outcome

    # ----- tracking -----------------------------------------------------------------------------

    async def _scores(self, candidate_id: str, split: str) -> tuple[Scores, list[UserScores]] | None:
        user_ids = getattr(self.split, split)
        episodes = self.evaluator.episodes(candidate_id, split, user_ids)
        finished = [e for e in episodes if len(e.periods) == len(self.items[e.user_id].periods)]
        if not finished:
            return None
        return runtime.scores(finished, [self.items[e.user_id] for e in finished], await self._upper_bound())

    async def _upper_bound(self) -> UpperBoundTable | None:
        if self.upper_bound is None and self.config.upper_bound:  # None also means "not asked for"
            self.upper_bound = await self.upper_bound_table(self.users)
        return self.upper_bound

    async def _candidate_metrics(self, candidate: Candidate, train: CandidateEval,
                                 val: CandidateEval | None) -> dict[str, float]:
        metrics: dict[str, float] = {"pruned": float(train.pruned), "train_users_evaluated": len(train.users)}
        for split, result in (("train", train), ("val", val)):
            if result is None:
                continue
            metrics[f"{split}_objective"] = result.score
            scored = await self._scores(candidate.id, split)
            if scored is None:
                continue
            summary, _ = scored
            metrics[f"{split}_accuracy"] = summary.accuracy
            if summary.memory_score is not None:
                metrics[f"{split}_memory_score"] = summary.memory_score
            for period in summary.per_period:
                metrics[f"{split}_accuracy_p{period.period:02d}"] = period.accuracy
                if period.memory_score is not None:
                    metrics[f"{split}_memory_score_p{period.period:02d}"] = period.memory_score
            metrics |= {f"{split}_{name}": value for name, value in extra_metrics(summary).items()}
            if summary.failure is not None:
                metrics[f"{split}_write_failure"] = summary.failure.write
                metrics[f"{split}_read_failure"] = summary.failure.read
                metrics[f"{split}_utilization_failure"] = summary.failure.utilization
        return metrics

    def _qa_table(self, candidate_id: str) -> str:
        rows = []
        for split in ("train", "val"):
            for episode in self.evaluator.episodes(candidate_id, split, getattr(self.split, split)):
                for period in episode.periods:
                    for qa in period.qa:
                        rows.append({"split": split, "user_id": qa.user_id, "period": qa.period,
                                     "question": qa.question_index, "choice": qa.choice, "gold": qa.gold,
                                     "correct": int(qa.correct), "format_error": int(qa.format_error)})
        return table_csv(rows)

    async def _log_generation(self, outcome: GenerationOutcome, candidates: list[Candidate],
                              evals: dict[str, tuple[CandidateEval, CandidateEval | None]], feedback: str) -> None:
        if self.tracker is None or self.tracker.generation_logged(outcome.generation):
            return
        self._start_tracking()
        entries = []
        for candidate in candidates:
            parent = self.candidates.get(candidate.parent_id or "", candidate)
            train, val = evals[candidate.id]
            artifacts = {f"prompts/{c.name}.txt": candidate.policy.prompts.get(c.name, c.default)
                         for c in self.spec.components}
            artifacts["diff.patch"] = unified_diff(parent.policy.prompts, candidate.policy.prompts)
            artifacts["feedback.txt"] = feedback or "(seed: no feedback)"
            artifacts["changes.txt"] = "\n".join(candidate.changes) or "(none)"
            artifacts["results.csv"] = self._qa_table(candidate.id)
            artifacts["policy.json"] = candidate.policy.model_dump_json(indent=2)
            entries.append({
                "label": candidate.label,
                "metrics": await self._candidate_metrics(candidate, train, val),
                "params": {"candidate_id": candidate.id, "parent_id": candidate.parent_id, "origin": candidate.origin,
                           "trial_number": candidate.trial_number, "update_every": candidate.policy.update_every,
                           "short_term": candidate.policy.short_term, "top_k": candidate.policy.top_k},
                "artifacts": artifacts,
            })
        usage = self.spend.total()
        metrics: dict[str, float] = {
            "best_train_score": max(outcome.train.values(), default=0.0),
            "parent_val_score": outcome.parent_val,
            "accepted": float(outcome.accepted),
            "n_candidates": len(candidates),
            "n_pruned": len(outcome.pruned),
            "proposals_rejected": outcome.stats.rejected,
            "proposals_repaired": outcome.stats.repaired,
        }
        if outcome.val:
            metrics["best_val_score"] = max(outcome.val.values())
        for role, spent in usage.by_role.items():
            metrics[f"calls_{role}"] = spent.calls
            metrics[f"tokens_{role}"] = spent.prompt_tokens + spent.completion_tokens
            metrics[f"dollars_{role}"] = spent.dollars
        self.tracker.log_generation(outcome.generation, metrics, entries)
        if outcome.accepted and self.config.tracking.register_prompts:
            kept = self.candidates[outcome.kept_id]
            prompts = {name: kept.policy.prompts.get(name, self._component(name).default)
                       for name in self.config.components}
            self.tracker.register_prompts(self.config.name, kept.id, prompts, best=True)

    def _start_tracking(self) -> None:
        assert self.tracker is not None
        self.tracker.start(self.config.name, self.tracking_params(), self.config.hash_payload())

    # ----- the run ------------------------------------------------------------------------------

    async def run(self) -> EvolutionResult:
        history = [await self._generation_zero()]
        parent, parent_val = self.seed, history[0].parent_val
        stale, stop = 0, "max generations"
        for generation in range(1, self.config.budget.generations + 1):
            stored = _read(self._gen_dir(generation) / "outcome.json", GenerationOutcome)
            if stored is None:
                exceeded = self.spend.exceeded(self.config)
                if exceeded:
                    stop = exceeded
                    break
                if self.config.budget.patience is not None and stale >= self.config.budget.patience:
                    stop = f"patience ({self.config.budget.patience})"
                    break
            plan = await self._plan(generation, parent)
            for candidate in plan.candidates:
                self.candidates[candidate.id] = candidate
            outcome = stored or await self._generation(generation, parent, parent_val)
            history.append(outcome)
            if outcome.accepted:
                parent, parent_val, stale = self.candidates[outcome.kept_id], outcome.parent_val, 0
            else:
                stale += 1
            if outcome.stop_reason:
                stop = outcome.stop_reason
                break
        return await self._finish(parent, history, stop)

    async def _test_scores(self, candidate: Candidate) -> tuple[Scores, list[UserScores]]:
        """Scores on the test users (never empty: the split guarantees at least one)."""
        await self.evaluator.evaluate(candidate, "test", self.split.test)
        scored = await self._scores(candidate.id, "test")
        assert scored is not None
        return scored

    async def _finish(self, best: Candidate, history: list[GenerationOutcome], stop: str) -> EvolutionResult:
        seed_scores, seed_users = await self._test_scores(self.seed)
        best_scores, best_users = await self._test_scores(best)
        self.spend.save()
        result = EvolutionResult(
            protocol="outer_loop", seed=self.seed, best=best, seed_scores=seed_scores, best_scores=best_scores,
            seed_user_scores=seed_users, best_user_scores=best_users, history=history, stop_reason=stop,
            usage=self.spend.total(),
        )
        _write(self.run_dir / "result.json", result)
        log.info("stopped: %s. test accuracy seed %.3f -> best %.3f", stop, seed_scores.accuracy, best_scores.accuracy)
        if self.tracker is not None:
            self._start_tracking()
            metrics = {"test_seed_accuracy": seed_scores.accuracy, "test_best_accuracy": best_scores.accuracy}
            if seed_scores.memory_score is not None and best_scores.memory_score is not None:
                metrics |= {"test_seed_memory_score": seed_scores.memory_score,
                            "test_best_memory_score": best_scores.memory_score}
            plot_rows = [{"generation": o.generation, "best_train_score": max(o.train.values(), default=None),
                          "best_val_score": max(o.val.values(), default=None), "parent_val_score": o.parent_val}
                         for o in history]
            self.tracker.finish(metrics, plot_rows, {"result.json": result.model_dump_json(indent=2),
                                                     "best_policy.json": best.policy.model_dump_json(indent=2)})
        return result


async def evolve(config: EvolveConfig, *, run_dir: Path, hub: runtime.Hub, resume: bool) -> EvolutionResult:
    """Async form of ``run_evolution`` (for callers already inside an event loop)."""
    run_dir = Path(run_dir)
    if config.protocol == "amemgym_period":
        from memevo.evolve.in_episode import InEpisodeEvolution

        run: OuterLoop | InEpisodeEvolution = InEpisodeEvolution(config, run_dir, hub, resume=resume)
    else:
        run = OuterLoop(config, run_dir, hub, resume=resume)
    try:
        return await run.run()
    finally:
        await run.close_clients()


def run_evolution(config: EvolveConfig, *, run_dir: Path, hub: runtime.Hub, resume: bool) -> EvolutionResult:
    """Run (or resume) one evolution to the end and return seed vs best on the test users.

    Nothing is written to ``run_dir`` until the config has been checked against the data; with
    ``resume`` a folder without a run starts one."""
    return asyncio.run(evolve(config, run_dir=run_dir, hub=hub, resume=resume))
