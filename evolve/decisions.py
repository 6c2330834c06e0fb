"""What a generation did with each of its candidates, in one sentence: the same words on its tracker run and on its
Optuna trial (``kept``, ``pruned: ...``, ``rejected: validation 0.410 vs parent 0.450``)."""

from __future__ import annotations

from memevo.evolve.candidates import Candidate
from memevo.evolve.evaluation import CandidateEval, Evaluator
from memevo.evolve.records import GenerationOutcome


def candidate_decision(candidate: Candidate, evals: dict[str, CandidateEval | None], *, outcome: GenerationOutcome,
                       parent_val: float | None) -> str:
    """What the generation did with a candidate, in the words a person reads on its run and its Optuna trial:
    ``kept``, ``accepted, not kept`` (a better one was kept), ``pruned``, ``rejected: validation 0.410 vs parent
    0.450``, ``not run: generation ended (...)``..."""
    train, val, minibatch = evals.get("train"), evals.get("val"), evals.get("minibatch")
    against = "" if parent_val is None else f" vs parent {parent_val:.3f}"
    if candidate.id == outcome.kept_id:
        if candidate.origin == "seed":
            return "kept: the seed" + ("" if val is None else f" (validation {val.score:.3f})")
        return "kept" + ("" if val is None else f": validation {val.score:.3f}{against}")
    if candidate.id in outcome.not_started:
        return "not run: generation ended (budget spent)"
    if candidate.id in outcome.not_needed:
        return "not run: generation ended (an earlier candidate was accepted)"
    if train is not None and train.pruned:
        return (f"pruned: stopped by the pruner after {len(train.users)} of {train.n_users_total} train users "
                f"(train {train.score:.3f})")
    if val is None and minibatch is not None:
        return f"rejected at the minibatch gate: {minibatch.score:.3f} on {len(minibatch.users)} train user(s)"
    if val is None:
        return "not run: generation ended"
    if candidate.id in outcome.accepted_ids:
        return f"accepted, not kept: validation {val.score:.3f}{against} (a better candidate was kept)"
    if parent_val is not None and val.score > parent_val:
        return f"not accepted: validation {val.score:.3f}{against} (not enough for the acceptance rule)"
    return f"rejected: validation {val.score:.3f}{against}"


def decision_of(evaluator: Evaluator, candidate: Candidate, parent: Candidate,
                evals: dict[str, CandidateEval | None], outcome: GenerationOutcome) -> str:
    """``candidate_decision`` against the parent's stored validation score."""
    parent_eval = evaluator.finished(parent.id, "val") if parent.id != candidate.id else None
    return candidate_decision(candidate, evals, outcome=outcome,
                              parent_val=parent_eval.score if parent_eval is not None else None)
