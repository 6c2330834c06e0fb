"""What ``memevo.optimize`` tells about each candidate and about the held-out test, read from the run's records:
one row per candidate with its scores and its fate in its generation, and the paired test of best against seed."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from memevo.core.lazy_model import LazyModel
from memevo.environments.metrics import UserScores
from memevo.evolve.candidate_costs import cost_metrics, saved_cost
from memevo.evolve.candidates import Candidate
from memevo.evolve.records import GenerationOutcome, GenerationPlan, read_record
from memevo.evolve.stats import PairedTest, paired_test


class CandidateRow(LazyModel):
    """One candidate's generation, scores (None: not measured on that split) and what its generation did with it."""

    id: str
    generation: int
    origin: str
    train: float | None
    val: float | None
    fate: str
    """``kept``, ``accepted``, ``rejected``, ``pruned``, ``gated`` (the minibatch gate), ``not run: budget spent``,
    ``not run: an earlier candidate was accepted``, or ``not decided`` (its generation has no outcome yet)."""
    cost_calls: int | None = None
    """Requests its episodes sent to an endpoint (agent and simulator; cache hits left out). None: no evaluation of
    it ended, or the run folder predates costs."""
    cost_tokens: int | None = None
    """Prompt and completion tokens of its episodes' calls, cache hits included (the workload)."""
    cost_dollars: float | None = None
    """Dollars of its episodes' priced requests; None also when every request was unpriced."""


def run_candidates(run_dir: Path, seed: Candidate) -> list[Candidate]:
    """The seed, then every candidate the generations of ``run_dir`` planned, in order."""
    plans = [read_record(path, GenerationPlan) for path in sorted(run_dir.glob("generations/gen_*/plan.json"))]
    return [seed, *(candidate for plan in plans if plan is not None for candidate in plan.candidates)]


def candidate_rows(candidates: Sequence[Candidate], generations: Sequence[GenerationOutcome],
                   run_dir: Path) -> list[CandidateRow]:
    """A row per candidate, the seed's from generation 0's outcome, its cost from ``run_dir``'s evaluations."""
    outcomes = {outcome.generation: outcome for outcome in generations}
    rows = []
    for candidate in candidates:
        outcome = outcomes.get(candidate.generation)
        cost = cost_metrics(saved_cost(run_dir, candidate.id))
        rows.append(CandidateRow(
            id=candidate.id, generation=candidate.generation, origin=candidate.origin,
            train=None if outcome is None else outcome.train.get(candidate.id),
            val=None if outcome is None else outcome.val.get(candidate.id),
            fate="not decided" if outcome is None else _fate(candidate.id, outcome),
            cost_calls=_whole(cost.get("cost_calls")), cost_tokens=_whole(cost.get("cost_tokens")),
            cost_dollars=cost.get("cost_dollars")))
    return rows


def _whole(count: float | None) -> int | None:
    return None if count is None else int(count)


def _fate(candidate_id: str, outcome: GenerationOutcome) -> str:
    for fate, ids in (("kept", [outcome.kept_id]), ("accepted", outcome.accepted_ids), ("pruned", outcome.pruned),
                      ("gated", outcome.gated), ("not run: budget spent", outcome.not_started),
                      ("not run: an earlier candidate was accepted", outcome.not_needed)):
        if candidate_id in ids:
            return fate
    return "rejected"


def user_values(objective: str, users: Sequence[UserScores]) -> dict[str, float]:
    """Each user's value of the objective (accuracy, or AMemGym's memory score); a user without one is left out."""
    picked = ((user.user_id, user.accuracy if objective == "accuracy" else user.memory_score) for user in users)
    return {user_id: value for user_id, value in picked if value is not None}


def paired_on_test_users(objective: str, seed: Sequence[UserScores], best: Sequence[UserScores]) -> PairedTest:
    """Best minus seed on the test users' objective, paired by user; users without a value on one side are counted
    as unmatched."""
    return paired_test(user_values(objective, seed), user_values(objective, best))
