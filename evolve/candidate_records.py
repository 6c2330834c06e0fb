"""A candidate as its run folder records it, made by the engine for the events that tell observers about it
(``events.CandidateRecord``): its saved evaluations' objectives, the scores and answers of the users those
evaluations covered, when they ran and what they cost.

Only users an evaluation's summary covers count: a pruned candidate's other users may have finished an episode, or
not, by the time the event is told (they were cancelled in flight), so counting them would make its figures depend
on timing. The records are made in the loop's thread, so observers read plain data and never the evaluator.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memevo.agents.llm.accounting import RoleUsage
from memevo.environments.metrics import Scores
from memevo.environments.question_table import score_columns
from memevo.evolve.candidates import Candidate
from memevo.evolve.decisions import GenerationDecisions, generation_decisions
from memevo.evolve.evaluation import CandidateEval, Evaluator
from memevo.evolve.events import CandidateOutcome, CandidateRecord
from memevo.evolve.records import GenerationOutcome

SPLITS = ("train", "val")
"""The splits whose episodes a candidate's record holds; a minibatch's episodes are part of the train split's."""


def covered_users(users: Mapping[str, list[str]], split: str, evals: Mapping[str, CandidateEval | None]) -> list[str]:
    """The users of ``split`` (in the split's order) that one of the candidate's saved evaluations of that split
    covers."""
    covered = {user.user_id for result in evals.values() if result is not None and result.split == split
               for user in result.users}
    return [user for user in users[split] if user in covered]


def _answer_rows(evaluator: Evaluator, candidate_id: str, split: str, user_ids: list[str]) -> list[dict[str, Any]]:
    return [{"split": split, "user_id": qa.user_id, "period": qa.period, "question": qa.question_index,
             "choice": qa.choice, "gold": qa.gold, **score_columns(qa), "correct": int(qa.correct),
             "format_error": int(qa.format_error)}
            for episode in evaluator.episodes(candidate_id, split, user_ids)
            for period in episode.periods for qa in period.qa]


def evaluation_span(evaluator: Evaluator, candidate_id: str) -> tuple[int, int] | None:
    """When a candidate's evaluations ran, in epoch milliseconds: its first user's episode began (the episode's
    ``meta.json``) to its last split's summary written. None when no evaluation left its files (a run folder
    written before, or a candidate never run): then the tracker's own times stand."""
    folder = evaluator.root / "evals" / candidate_id
    starts = [path.stat().st_mtime for path in folder.glob("*/users/*/meta.json")]
    ends = [path.stat().st_mtime for path in folder.glob("*.json")]
    if not starts or not ends:
        return None
    return int(min(starts) * 1000), int(max(max(ends), max(starts)) * 1000)


def candidate_record(evaluator: Evaluator, users: Mapping[str, list[str]], candidate: Candidate,
                     evals: Mapping[str, CandidateEval | None]) -> CandidateRecord:
    """The record of ``candidate`` with its evaluations ``evals`` by label (empty for one never run): the scores of
    the users the ``train`` and ``val`` evaluations covered, the answers of every user any of them covered."""
    train = evals.get("train")
    scores: dict[str, Scores] = {}
    answers: list[dict[str, Any]] = []
    for split in SPLITS:
        answers += _answer_rows(evaluator, candidate.id, split, covered_users(users, split, evals))
        result = evals.get(split)
        scored = None if result is None else evaluator.scores(candidate.id, split, [u.user_id for u in result.users])
        if scored is not None:
            scores[split] = scored[0]
    return CandidateRecord(
        objectives={label: result.score for label, result in evals.items() if result is not None},
        pruned=bool(train and train.pruned),
        gated=train is None and evals.get("val") is None and evals.get("minibatch") is not None,
        train_users=len(train.users) if train else 0, scores=scores, answers=answers,
        span=evaluation_span(evaluator, candidate.id), cost=evaluator.costs.total(candidate.id) or RoleUsage())


def generation_records(evaluator: Evaluator, users: Mapping[str, list[str]], gen_dir: Path, outcome: GenerationOutcome,
                       ran: Sequence[tuple[Candidate, CandidateOutcome]], never_run: Sequence[Candidate],
                       lineage: Mapping[str, Candidate]) -> tuple[GenerationDecisions, dict[str, CandidateRecord]]:
    """A generation's decisions (``decisions.generation_decisions``, saved in ``gen_dir``) and each candidate's
    record by id, in the plan's order (those run, then those never run)."""
    evals = {candidate.id: run.evals() for candidate, run in ran} | {candidate.id: {} for candidate in never_run}
    candidates = [*(candidate for candidate, _ in ran), *never_run]

    def parent_val(candidate: Candidate) -> float | None:
        parent = lineage.get(candidate.parent_id or "", candidate)
        val = None if parent.id == candidate.id else evaluator.finished(parent.id, "val")
        return None if val is None else val.score

    decisions = generation_decisions(gen_dir, outcome, [(candidate, evals[candidate.id], parent_val(candidate))
                                                        for candidate in candidates])
    records = {candidate.id: candidate_record(evaluator, users, candidate, evals[candidate.id])
               for candidate in candidates}
    return decisions, records
