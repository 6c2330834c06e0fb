"""The terminal: one progress bar per phase of work, and the lines that say what a generation, an in-episode step and
the run did."""

from __future__ import annotations

import importlib
import logging
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memevo.core import library_log
from memevo.environments.progress import Phase
from memevo.environments.score_text import FigureName
from memevo.environments.short_ids import short_user_id
from memevo.evolve.cross_test import cross_test_lines
from memevo.evolve.events import (
    CandidatesPhase,
    EvaluationPhase,
    Event,
    GenerationEnded,
    GenerationPlanned,
    InEpisodeEnded,
    Observer,
    PhaseAdvanced,
    PhaseEnded,
    PhaseKind,
    PhaseSkipped,
    PhaseStarted,
    RunContext,
    RunEnded,
    UserEvolved,
)
from memevo.evolve.presentation.candidate_lines import candidate_line, library_warnings_line, truncation_line
from memevo.evolve.presentation.explain import generation_line, proposals_line
from memevo.evolve.presentation.progress import candidates_phase, evaluation_phase, test_phase

if TYPE_CHECKING:
    from memevo.evolve.records import EvolutionResult

log = logging.getLogger("memevo.evolve")


def _bar(phase: PhaseKind) -> AbstractContextManager[Phase]:
    match phase:
        case CandidatesPhase(generation, total):
            return candidates_phase(generation, total)
        case EvaluationPhase(label, split, periods):
            return evaluation_phase(label, split, periods)
        case _:
            return test_phase(phase.periods)


@dataclass(frozen=True)
class RunFacts:
    """What the terminal's lines name beyond the events: the hyperparameters Optuna tunes, the run's users (whose
    ids the lines shorten) and the proposer's completion token cap."""

    tuned: tuple[str, ...] = ()
    users: tuple[str, ...] = ()
    proposer_max_tokens: int = 0

    @classmethod
    def of(cls, context: RunContext) -> RunFacts:
        split = context.split
        return cls(tuned=tuple(context.config.hyperparameters), users=(*split.train, *split.val, *split.test),
                   proposer_max_tokens=context.config.llm.proposer.max_tokens)


class TerminalObserver(Observer):
    """Draws the phases the loop reports (several at once: candidates evaluate concurrently) and logs its lines."""

    def __init__(self, objective: str, figure: FigureName | None = None, *, facts: RunFacts = RunFacts()) -> None:
        self.objective = objective
        self.figure = figure
        """The run's name for its headline figure (``RunContext.figure``)."""
        self.bars: dict[int, tuple[ExitStack, Phase]] = {}
        self.facts = facts
        self.truncations_told = 0

    def warm_up(self) -> None:
        importlib.import_module("memevo.evolve.presentation.headline")

    def notify(self, event: Event) -> None:
        match event:
            case PhaseStarted(key, phase):
                stack = ExitStack()
                self.bars[key] = (stack, stack.enter_context(_bar(phase)))
            case PhaseAdvanced(key, units):
                self.bars[key][1].advance(units)
            case PhaseSkipped(key, units):
                self.bars[key][1].skip(units)
            case PhaseEnded(key):
                self.bars.pop(key)[0].close()
            case GenerationPlanned():
                self._planned(event)
                self._candidates(event)
                self._truncations(event.plan.generation)
            case GenerationEnded():
                self._decided(event)
                self._ended(event)
            case RunEnded():
                self._run_ended(event)
            case UserEvolved(step, evolved):
                log.info("user %s period %d: evolved %s (%d rejected)", short_user_id(step.user_id, self.facts.users),
                         step.period, list(evolved) or "nothing", step.stats.rejected)
            case InEpisodeEnded(result):
                log.info("in-episode evolution, %s", self._held_out(result, best_label="evolving"))
                self._library_warnings()

    @staticmethod
    def _planned(event: GenerationPlanned) -> None:
        plan = event.plan
        tuning = sum(candidate.origin == "tuning" for candidate in plan.candidates)
        log.info("%s; parent %s", proposals_line(plan.generation, prompt_candidates=len(plan.candidates) - tuning,
                                                 tuning_candidates=tuning, proposals=plan.stats.total,
                                                 rejected=plan.stats.rejected, repaired=plan.stats.repaired,
                                                 duplicates=plan.stats.duplicates),
                 event.parent.label)

    def _candidates(self, event: GenerationPlanned) -> None:
        """Each candidate's prompt change beside the values Optuna drew for it."""
        for candidate in event.plan.candidates:
            log.info("%s", candidate_line(candidate, event.parent, self.facts.tuned))

    def _truncations(self, generation: int) -> None:
        """One line when the proposer's replies were cut at their token cap while the plan was made."""
        routed = library_log.current()
        if routed is None:
            return
        total = routed.count(library_log.TRUNCATED)
        if total > self.truncations_told:
            log.warning("%s", truncation_line(generation, total - self.truncations_told, total,
                                              self.facts.proposer_max_tokens, routed.path))
            self.truncations_told = total

    def _decided(self, event: GenerationEnded) -> None:
        """Each candidate's decision, in the words its tracker run and its Optuna trial show."""
        if event.outcome.generation == 0:
            return
        for decision in event.decisions.decisions:
            log.info("gen %d %s: %s", decision.generation, decision.label, decision.text)

    @staticmethod
    def _ended(event: GenerationEnded) -> None:
        outcome = event.outcome
        if outcome.generation == 0:
            return
        log.info(generation_line(outcome.generation, candidates=len(event.ran) + len(event.never_run),
                                 pruned=len(outcome.pruned) + len(outcome.gated),
                                 generation_best=max(outcome.val.values(), default=None), kept=event.kept.label,
                                 improved=event.improved, kept_objective=outcome.parent_val, usage=event.spend))

    def _held_out(self, result: EvolutionResult, *, best_label: str = "best") -> str:
        from memevo.evolve.presentation.headline import (
            held_out_line,  # scipy.stats: not on the way to the first request
        )

        return held_out_line(self.objective, result.seed_scores, result.best_scores, best_label=best_label,
                             figure=self.figure)

    def _run_ended(self, event: RunEnded) -> None:
        from memevo.evolve.presentation.headline import category_line

        result = event.result
        log.info("stopped: %s. %s", result.stop_reason, self._held_out(result))
        categories = category_line(result.seed_scores, result.best_scores, figure=self.figure)
        if categories is not None:
            log.info("%s", categories)
        for line in [] if event.cross is None else cross_test_lines(event.cross):
            log.info("%s", line)
        self._library_warnings()

    @staticmethod
    def _library_warnings() -> None:
        """Where the libraries' warnings went, when there were any."""
        routed = library_log.current()
        if routed is not None and routed.count():
            log.info("%s", library_warnings_line(routed.count(), routed.path))


def make_observer(context: RunContext) -> Observer:
    return TerminalObserver(context.config.objective, context.figure, facts=RunFacts.of(context))
