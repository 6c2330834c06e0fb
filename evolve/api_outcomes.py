"""What ``memevo.optimize`` and ``memevo report`` tell about each candidate and about the held-out test, read from the
run's records: one row per candidate with its scores, its generation's decision about it (the one record the terminal,
MLflow and Optuna read) and its cost, and the paired test of best against seed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from memevo.core.lazy_model import LazyModel
from memevo.core.run_files import read_model
from memevo.environments.metrics import UserScores
from memevo.evolve.candidate_costs import cost_metrics, saved_cost
from memevo.evolve.candidates import Candidate
from memevo.evolve.decisions import DECISIONS_FILE, CandidateDecision, DecisionState, GenerationDecisions
from memevo.evolve.records import GenerationOutcome, GenerationPlan, read_record, read_written
from memevo.evolve.stats import PairedTest, paired_test

DECISIONS_REMEDY = ("restore it from a copy: it is the record of what the generation did with each candidate, which "
                    "the terminal, the MLflow runs and the Optuna trials showed; a resume does not write it again")
STATE_WORDS = {"kept": "kept", "accepted": "accepted, not kept", "rejected": "rejected", "pruned": "pruned",
               "not_run": "not run"}
"""A decision state (``decisions.CandidateDecision.state``) as a count of candidates names it."""
NOT_DECIDED = "not decided: its generation has not ended"
NO_RECORD = "n/a: its generation has no decisions.json (a run folder from before decision records)"


class CandidateRow(LazyModel):
    """One candidate's generation, scores (None: not measured on that split), what its generation decided about it
    (read from the generation's ``decisions.json``) and its cost."""

    id: str
    label: str
    """``g<generation>c<index>-<first 8 characters of the id>``, as the terminal, MLflow and Optuna name it."""
    generation: int
    origin: str
    train: float | None
    val: float | None
    state: DecisionState | None
    """``kept``, ``accepted`` (not kept), ``rejected``, ``pruned`` or ``not_run``; None when no decision is recorded."""
    fate: str
    """The decision in the words of its record, which the terminal, its MLflow run and its Optuna trial show too:
    ``kept: validation 0.562 vs parent 0.312``, ``rejected in the race: found worse than its parent (...)``,
    ``pruned: stopped by the pruner after 2 of 3 train users (...)``, ``not run: generation ended (budget spent)``;
    ``not decided: ...`` while its generation runs, ``n/a: ...`` for a run folder without decision records."""
    cost_calls: int | None = None
    """Requests its episodes sent to an endpoint (agent and simulator; cache hits left out). None: no evaluation of
    it ended, or the run folder predates costs."""
    cost_tokens: int | None = None
    """Prompt and completion tokens of its episodes' calls, cache hits included (the workload)."""
    cost_dollars: float | None = None
    """Dollars of its episodes' priced requests; None also when every request was unpriced."""


def run_candidates(run_dir: Path, seed: Candidate | None) -> list[Candidate]:
    """The seed (None: not known yet, the run unfinished), then every candidate the generations of ``run_dir``
    planned, in order."""
    plans = [read_record(path, GenerationPlan) for path in sorted(run_dir.glob("generations/gen_*/plan.json"))]
    planned = [candidate for plan in plans if plan is not None for candidate in plan.candidates]
    return planned if seed is None else [seed, *planned]


def written_history(run_dir: Path) -> list[GenerationOutcome]:
    """The generations' outcomes of ``run_dir`` read outside its run (a damaged one names the resume that rewrites
    it)."""
    return [read_written(path, GenerationOutcome, run_dir)
            for path in sorted(run_dir.glob("generations/gen_*/outcome.json"))]


def written_rows(run_dir: Path, seed: Candidate | None) -> list[CandidateRow]:
    """``candidate_rows`` of ``run_dir`` read outside its run, as ``memevo report`` and ``memevo compare`` do."""
    return candidate_rows(run_candidates(run_dir, seed), written_history(run_dir), run_dir)


def run_decisions(run_dir: Path) -> dict[int, dict[str, CandidateDecision]]:
    """Per generation of ``run_dir`` that recorded its decisions, each candidate's; a damaged record stops the reader
    naming it (a resume does not write it again)."""
    recorded: dict[int, dict[str, CandidateDecision]] = {}
    for path in sorted(run_dir.glob(f"generations/gen_*/{DECISIONS_FILE}")):
        record = read_model(path, GenerationDecisions, remedy=DECISIONS_REMEDY)
        if record is not None:
            generation = int(path.parent.name.removeprefix("gen_"))
            recorded[generation] = {decision.candidate_id: decision for decision in record.decisions}
    return recorded


def candidate_rows(candidates: Sequence[Candidate], generations: Sequence[GenerationOutcome],
                   run_dir: Path) -> list[CandidateRow]:
    """A row per candidate: its scores from its generation's outcome (the seed's from generation 0), its decision
    from the generation's ``decisions.json``, its cost from ``run_dir``'s evaluations."""
    outcomes = {outcome.generation: outcome for outcome in generations}
    decisions = run_decisions(run_dir)
    rows = []
    for candidate in candidates:
        outcome = outcomes.get(candidate.generation)
        decision = decisions.get(candidate.generation, {}).get(candidate.id)
        cost = cost_metrics(saved_cost(run_dir, candidate.id))
        rows.append(CandidateRow(
            id=candidate.id, label=candidate.label, generation=candidate.generation, origin=candidate.origin,
            train=None if outcome is None else outcome.train.get(candidate.id),
            val=None if outcome is None else outcome.val.get(candidate.id),
            state=None if decision is None else decision.state,
            fate=decision.text if decision is not None else NOT_DECIDED if outcome is None else NO_RECORD,
            cost_calls=_whole(cost.get("cost_calls")), cost_tokens=_whole(cost.get("cost_tokens")),
            cost_dollars=cost.get("cost_dollars")))
    return rows


def decision_counts(rows: Sequence[CandidateRow]) -> str:
    """How many candidates each decision state holds (``1 kept, 2 rejected, 1 not run``), in order of appearance."""
    counts = Counter(STATE_WORDS.get(row.state or "", "without a decision record") for row in rows)
    return ", ".join(f"{count} {state}" for state, count in counts.items())


def _whole(count: float | None) -> int | None:
    return None if count is None else int(count)


def user_values(objective: str, users: Sequence[UserScores]) -> dict[str, float]:
    """Each user's value of the objective (accuracy, or AMemGym's memory score); a user without one is left out."""
    picked = ((user.user_id, user.accuracy if objective == "accuracy" else user.memory_score) for user in users)
    return {user_id: value for user_id, value in picked if value is not None}


def user_weights(objective: str, users: Sequence[UserScores]) -> dict[str, float]:
    """Each user's weight in a mean over users: its questions for accuracy, so the mean is the score pooled over
    questions (the one every other figure shows); 1 for AMemGym's memory score, a mean of ratios."""
    return {user.user_id: float(user.n_questions) if objective == "accuracy" else 1.0 for user in users}


def paired_on_test_users(objective: str, seed: Sequence[UserScores], best: Sequence[UserScores]) -> PairedTest:
    """Best minus seed on the test users' objective, paired by user and weighted (``user_weights``); users without a
    value on one side are counted as unmatched."""
    return paired_test(user_values(objective, seed), user_values(objective, best), weights=user_weights(objective, best))
