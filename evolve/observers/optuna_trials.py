"""Optuna as an observer: the tell/annotate side of the loop's trials (asking stays the loop's: it needs the answer).

A generation's trials are closed when it ends, each with the objective on the train users its candidate was run on,
or none with the reason its tracker run shows; each first gets its attributes (Optuna refuses to change a finished
trial), among them the candidate's tracker run, which exists by then (the tracker comes first in the registry).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memevo.evolve.deferred import Deferred
from memevo.evolve.events import (
    CandidateProposed,
    Event,
    GenerationEnded,
    Observer,
    ProposalRepeated,
    RunContext,
)
from memevo.evolve.scheduling import CandidateRun
from memevo.evolve.tracking.entries import decision_of
from memevo.evolve.tracking.payloads import trial_attributes

if TYPE_CHECKING:  # the study opens in the start-up thread; importing optuna here would put it before the first request
    from memevo.evolve.tuner import Tuner


class OptunaObserver(Observer):
    def __init__(self, context: RunContext, tuner: Deferred[Tuner]) -> None:
        self.context = context
        self._tuner = tuner

    @property
    def tuner(self) -> Tuner:
        return self._tuner.result()

    def notify(self, event: Event) -> None:
        match event:
            case CandidateProposed(candidate):
                assert candidate.trial_number is not None
                self.tuner.annotate(candidate.trial_number, candidate_id=candidate.id)
            case ProposalRepeated(trial_number):
                self.tuner.tell(trial_number, None, reason="not run: the proposal repeated a known policy")
            case GenerationEnded():
                self._close_trials(event)

    def _close_trials(self, event: GenerationEnded) -> None:
        """Gate, pruner, budget, not needed, or validation first rejected on validation: told no value."""
        outcome, objective = event.outcome, self.context.objective_name
        runs = [(candidate, CandidateRun(train=None)) for candidate in event.never_run] + list(event.ran)
        for candidate, result in runs:
            assert candidate.trial_number is not None
            decision = decision_of(self.context.evaluator, candidate, event.parent_of(candidate), result.evals(),
                                   outcome)
            self.tuner.annotate(candidate.trial_number, **trial_attributes(
                candidate_id=candidate.id, label=candidate.label, generation=candidate.generation,
                objective=objective, val_score=result.val.score if result.val is not None else None,
                run_id=self.context.run_link(candidate.generation, candidate.label),
                kept=candidate.id == outcome.kept_id, decision=decision))
            check = result.train_check
            self.tuner.tell(candidate.trial_number, None if check is None or check.pruned else check.score,
                            reason=decision)


def make_observer(context: RunContext) -> Observer:
    assert context.tuner is not None  # the registry uses it only then
    return OptunaObserver(context, context.tuner)
