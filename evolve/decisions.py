"""What a generation did with each of its candidates: one record per candidate (``CandidateDecision``), saved once
in the generation's folder (``decisions.json``) and read by the terminal, the tracker runs and the Optuna trials, so
they all say the same words (``kept``, ``pruned: ...``, ``rejected in the race: mean gain -0.111 ...``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from memevo.core.atomic_files import write_json_atomic
from memevo.core.lazy_model import LazyModel
from memevo.core.run_files import read_json, read_or_recompute
from memevo.evolve.candidates import Candidate
from memevo.evolve.evaluation import CandidateEval
from memevo.evolve.records import GenerationOutcome
from memevo.evolve.selection.race import RaceRecord
from memevo.evolve.selection.sequential import Verdict

DecisionState = Literal["kept", "accepted", "rejected", "pruned", "not_run"]
"""``kept`` and ``accepted`` candidates passed the generation's rule; ``rejected`` and ``pruned`` ones ran and did
not; ``not_run`` ones never played a user."""
DECISIONS_FILE = "decisions.json"
RACE_LOSS = {"worse": "found worse than its parent", "open": "not found better than its parent",
             "better": "another candidate's gain was larger"}
"""Why a candidate that raced was not kept, by the test's last verdict on it."""


class CandidateDecision(LazyModel):
    """What the generation did with one candidate: its state and the sentence a person reads."""

    candidate_id: str
    label: str
    generation: int
    state: DecisionState
    text: str


class GenerationDecisions(LazyModel):
    """A generation's decisions, in the order its candidates were planned (the kept seed alone in generation 0)."""

    decisions: list[CandidateDecision]

    def of(self, candidate_id: str) -> CandidateDecision:
        (decision,) = [d for d in self.decisions if d.candidate_id == candidate_id]
        return decision


def _decided(candidate: Candidate, evals: dict[str, CandidateEval | None], *, outcome: GenerationOutcome,
             parent_val: float | None, race: Verdict | None) -> tuple[DecisionState, str]:
    """The state and sentence of ``candidate_decision``."""
    train, val, minibatch = evals.get("train"), evals.get("val"), evals.get("minibatch")
    against = "" if parent_val is None else f" vs parent {parent_val:.3f}"
    if candidate.id == outcome.kept_id:
        if candidate.origin == "seed":
            return "kept", "kept: the seed" + ("" if val is None else f" (validation {val.score:.3f})")
        return "kept", "kept" + ("" if val is None else f": validation {val.score:.3f}{against}")
    if candidate.id in outcome.not_started:
        return "not_run", "not run: generation ended (budget spent)"
    if candidate.id in outcome.not_needed:
        return "not_run", "not run: generation ended (an earlier candidate was accepted)"
    if train is not None and train.pruned:
        return "pruned", (f"pruned: stopped by the pruner after {len(train.users)} of {train.n_users_total} train "
                          f"users (train {train.score:.3f})")
    if val is None and minibatch is not None:
        return "pruned", f"rejected at the minibatch gate: {minibatch.score:.3f} on {len(minibatch.users)} train user(s)"
    if candidate.id in outcome.accepted_ids:
        shown = "" if val is None else f": validation {val.score:.3f}{against}"
        return "accepted", f"accepted, not kept{shown} (a better candidate was kept)"
    if race is not None:
        return "rejected", f"rejected in the race: {RACE_LOSS[race.state]} ({race.reason})"
    if val is None:
        return "not_run", "not run: generation ended"
    if parent_val is not None and val.score > parent_val:
        return "rejected", f"not accepted: validation {val.score:.3f}{against} (not enough for the acceptance rule)"
    return "rejected", f"rejected: validation {val.score:.3f}{against}"


def candidate_decision(candidate: Candidate, evals: dict[str, CandidateEval | None], *, outcome: GenerationOutcome,
                       parent_val: float | None, race: Verdict | None = None) -> str:
    """What the generation did with a candidate, in the words a person reads on its run and its Optuna trial:
    ``kept``, ``accepted, not kept`` (a better one was kept), ``pruned``, ``rejected: validation 0.410 vs parent
    0.450``, ``rejected in the race: mean gain ...`` (``race``: its last verdict), ``not run: generation ended``..."""
    return _decided(candidate, evals, outcome=outcome, parent_val=parent_val, race=race)[1]


def race_verdicts(gen_dir: Path) -> dict[str, Verdict]:
    """Per candidate a race of the generation looked at, the test's last verdict (none without ``race.json``)."""
    path = gen_dir / "race.json"
    if not path.exists():
        return {}
    records = [RaceRecord.model_validate(r) for r in read_json(path, remedy="restore it: the race's verdicts")]
    return {cid: verdict for record in records for round_ in record.rounds for cid, verdict in round_.verdicts.items()}


Planned = tuple[Candidate, dict[str, CandidateEval | None], float | None]
"""One candidate of a generation, as its decision reads it: its evaluations (empty when it never ran) and its parent's
validation score (None for the seed, its own parent)."""


def _decide(outcome: GenerationOutcome, planned: Sequence[Planned], verdicts: dict[str, Verdict]) -> GenerationDecisions:
    decisions = []
    for candidate, evals, parent_val in planned:
        state, text = _decided(candidate, evals, outcome=outcome, parent_val=parent_val,
                               race=verdicts.get(candidate.id))
        decisions.append(CandidateDecision(candidate_id=candidate.id, label=candidate.label,
                                           generation=outcome.generation, state=state, text=text))
    return GenerationDecisions(decisions=decisions)


def generation_decisions(gen_dir: Path, outcome: GenerationOutcome, planned: Sequence[Planned]) -> GenerationDecisions:
    """The generation's decisions (``gen_dir`` its folder, ``planned`` its candidates in the plan's order): the saved
    ones, or made now from its outcome, evaluations and race and saved, so every reader of the generation's end
    (terminal, tracker, tuner, also after a resume) reads the same record."""
    path = gen_dir / DECISIONS_FILE
    stored = read_or_recompute(path, GenerationDecisions)
    if stored is not None:
        return stored
    decisions = _decide(outcome, planned, race_verdicts(gen_dir))
    write_json_atomic(path, decisions.model_dump(mode="json"))
    return decisions
