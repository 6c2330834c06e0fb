"""What the evolution loop tells the world: event records, the observer base, and the fan-out.

The loop orders generations and emits an event at each point something outside it may care about (a plan made, a
phase of work started or advanced, a generation or the run ended); AMemGym's in-episode protocol emits its own (a
user's prompts evolved, the run ended). Observers (the tracker's runs, the terminal, the score plot;
``memevo.evolve.plugins`` names them) turn events into their own records, so neither imports any of them. Events
are handed to the observers one at a time, in the registry's order, in the loop's thread: a resumed run emits the
same events in the same order, so every observer writes the same records.

The records an event carries are named here by what observers read of them (``CandidateOutcome``, ``UsersSplit``,
``UserStep``), so this module imports none of the engine's modules that emit events. What observers read of a
candidate is a plain record the engine made from its run folder (``CandidateRecord``, ``candidate_records``), and the
run's settings come as values (``RunContext``): no observer holds the evaluator or the tuner.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from memevo.environments.score_text import FigureName

if TYPE_CHECKING:
    from memevo.agents.base import AgentSpec
    from memevo.agents.llm.accounting import RoleUsage, UsageReport
    from memevo.environments.metrics import Scores
    from memevo.evolve.candidates import Candidate
    from memevo.evolve.config import EvolveConfig
    from memevo.evolve.cross_test import CrossTestResult
    from memevo.evolve.decisions import GenerationDecisions
    from memevo.evolve.deferred import DeferredStart
    from memevo.evolve.evaluation import CandidateEval
    from memevo.evolve.records import EvolutionResult, GenerationOutcome, GenerationPlan, ProposalStats


# ----- what events carry (the engine's records, as observers read them) ---------------------------------------------

class CandidateOutcome(Protocol):
    """What happened to one candidate in its generation (``scheduling.CandidateRun``)."""

    @property
    def val(self) -> CandidateEval | None: ...

    @property
    def train_check(self) -> CandidateEval | None: ...

    def evals(self) -> dict[str, CandidateEval | None]: ...


class UsersSplit(Protocol):
    """The run's user ids per split (``runtime.Split``)."""

    @property
    def train(self) -> list[str]: ...

    @property
    def val(self) -> list[str]: ...

    @property
    def test(self) -> list[str]: ...


class UserStep(Protocol):
    """One in-episode evolution step of one user (``in_episode.EvolutionStep``)."""

    @property
    def user_id(self) -> str: ...

    @property
    def period(self) -> int: ...

    @property
    def stats(self) -> ProposalStats: ...


@dataclass(frozen=True)
class CandidateRecord:
    """One candidate as its run folder records it when an event is told (``candidate_records.candidate_record``):
    what a tracker logs of it, so its metrics are those of its saved evaluations, whatever else is in flight."""

    objectives: Mapping[str, float]
    """The objective on each evaluation (``train``, ``val``, ``minibatch``) as its summary saved it."""
    pruned: bool
    gated: bool
    """Stopped by the minibatch gate before validation."""
    train_users: int
    """Train users its train evaluation covered (a pruned one: the prefix played before the pruner stopped it)."""
    scores: Mapping[str, Scores]
    """Per split (``train``, ``val``) the scores of the users its saved evaluation covered."""
    answers: Sequence[Mapping[str, Any]]
    """One row per question of those users (a tracker's answers table)."""
    span: tuple[int, int] | None
    """When its evaluations ran, in epoch milliseconds (None when none left its files)."""
    cost: RoleUsage
    """The calls of its episodes so far (zero for one never played)."""


# ----- phases of work (what a progress display shows) ------------------------------------------------------------

@dataclass(frozen=True)
class CandidatesPhase:
    """A generation's candidates; a unit is one candidate run (or raced)."""

    generation: int
    total: int


@dataclass(frozen=True)
class EvaluationPhase:
    """One candidate on one split; a unit is one user's period, ``periods`` the sum over the split's users."""

    label: str
    split: str
    periods: int


@dataclass(frozen=True)
class FinalScoringPhase:
    """Seed and best on the test users (or the test environment's items) at the end of the run."""

    periods: int


PhaseKind = CandidatesPhase | EvaluationPhase | FinalScoringPhase


@dataclass(frozen=True)
class PhaseStarted:
    key: int
    phase: PhaseKind


@dataclass(frozen=True)
class PhaseAdvanced:
    key: int
    units: int


@dataclass(frozen=True)
class PhaseSkipped:
    """Units that turned out not to be needed (the candidates after the one kept)."""

    key: int
    units: int


@dataclass(frozen=True)
class PhaseEnded:
    key: int


# ----- the search ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class GenerationPlanned:
    """A generation's candidates are known (also when a resume read its saved plan)."""

    plan: GenerationPlan
    parent: Candidate


@dataclass(frozen=True)
class ParentTrainCompleted:
    """A parent checked on a minibatch only ran on every train user after its generation was recorded."""

    parent: Candidate
    record: CandidateRecord


@dataclass(frozen=True)
class GenerationEnded:
    """A generation's candidates are decided; its outcome is saved right after every observer had it.

    ``usage`` is the run's usage saved when the generation's evaluations ended (the same on a resume), ``spend``
    the run's total at the time of the event; ``decisions`` what the generation did with each candidate (saved in its
    folder), ``records`` each candidate's record by id (those never run included)."""

    outcome: GenerationOutcome
    ran: Sequence[tuple[Candidate, CandidateOutcome]]
    never_run: Sequence[Candidate]
    lineage: Mapping[str, Candidate]
    feedback: str
    usage: UsageReport
    spend: RoleUsage
    decisions: GenerationDecisions
    records: Mapping[str, CandidateRecord]

    @property
    def kept(self) -> Candidate:
        return self.lineage[self.outcome.kept_id]

    @property
    def improved(self) -> bool:
        """The generation changed the running best: it kept one of its own candidates."""
        return self.outcome.generation > 0 and self.outcome.kept_id in self.outcome.accepted_ids

    def parent_of(self, candidate: Candidate) -> Candidate:
        return self.lineage.get(candidate.parent_id or "", candidate)


@dataclass(frozen=True)
class RunEnded:
    """Seed and best scored on the test users (``result.json`` is saved); ``costs`` the calls of each one's episodes,
    the test users' included, by candidate id."""

    result: EvolutionResult
    cross: CrossTestResult | None
    costs: Mapping[str, RoleUsage]


# ----- AMemGym's in-episode protocol ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class UserEvolved:
    """One user's prompts were rewritten after one of its periods (``evolved`` names the components the proposal
    changed, empty when it changed none); the step is saved. A resume does not repeat it for a restored period."""

    step: UserStep
    evolved: Sequence[str]


@dataclass(frozen=True)
class InEpisodeEnded:
    """Seed and the evolving arm scored on the test users; ``result.json`` and every user's steps are saved."""

    result: EvolutionResult


Event = (PhaseStarted | PhaseAdvanced | PhaseSkipped | PhaseEnded | GenerationPlanned | ParentTrainCompleted | GenerationEnded | RunEnded | UserEvolved | InEpisodeEnded)


# ----- observers ---------------------------------------------------------------------------------------------------

def objective_name(objective: str, figure: str) -> str:
    """What the run's tags, attributes and Optuna study call its objective: the headline figure's name for
    ``accuracy`` (``score_f1`` on answers scored by F1: ``figure``), AMemGym's memory score under its own."""
    return figure if objective == "accuracy" else objective


@dataclass
class RunContext:
    """What observers may read about the run beyond the events: its settings, folder, users and the name of its
    headline figure; values only, never the engine's live objects."""

    config: EvolveConfig
    run_dir: Path
    split: UsersSplit
    seed: Candidate
    spec: AgentSpec
    start_later: DeferredStart
    """Start-up work an observer needs later but not for the run's first request (e.g. MLflow's store)."""
    figure: FigureName
    """What the run's lines call the headline figure (``accuracy`` or ``score``), decided once from every question of
    the run's data (``score_text.data_figure_name``)."""
    figure_key: str
    """What the run's metric names call it (``val_accuracy``, ``val_score_f1``): decided once from every question of
    the run's data (``score_text.data_figure_key``), so no candidate or split logs it under another name."""
    data_hash: str
    """The hash of the run's data (``runtime.data_hash``), which identifies the users' content."""

    @property
    def users(self) -> dict[str, list[str]]:
        return {"train": self.split.train, "val": self.split.val}

    @property
    def objective_name(self) -> str:
        """The objective as the run's params, tags and attributes name it (``val_<objective_name>``): the headline
        figure's metric name for ``accuracy``, AMemGym's memory score under its own."""
        return objective_name(self.config.objective, self.figure_key)


class Observer:
    """One consumer of the loop's events; ``notify`` ignores the events it has no use for."""

    def notify(self, event: Event) -> None:
        """Handle one event (called in the loop's thread, in the order the loop emitted them)."""

    def links(self, generation: int, label: str) -> dict[str, str]:
        """Trial attributes that lead to this observer's record of a candidate (generation, label), when it keeps
        one (a tracker does: ``{"mlflow_run_id": ...}``); empty before it is logged."""
        return {}

    def warm_up(self) -> None:
        """Import what the run's end needs (a plot's matplotlib, say), called in the start-up thread while the run
        waits on its endpoint, so the end does not wait for it after the last request."""


class Progress:
    """A handle on one running phase: the loop advances it per finished unit, observers draw it."""

    def __init__(self, emit: Callable[[Event], None], key: int) -> None:
        self._emit = emit
        self._key = key

    def advance(self, units: int = 1) -> None:
        self._emit(PhaseAdvanced(self._key, units))

    def skip(self, units: int) -> None:
        if units:
            self._emit(PhaseSkipped(self._key, units))


class Observers(Observer):
    """The fan-out: each event goes to every observer, in the order they were added."""

    def __init__(self) -> None:
        self.named: dict[str, Observer] = {}
        self._keys = itertools.count()

    def add(self, name: str, observer: Observer) -> None:
        self.named[name] = observer

    def notify(self, event: Event) -> None:
        for observer in self.named.values():
            observer.notify(event)

    def warm_up(self) -> None:
        for observer in self.named.values():
            observer.warm_up()

    def links(self, generation: int, label: str) -> dict[str, str]:
        return {key: value for observer in self.named.values() for key, value in observer.links(generation, label).items()}

    @contextmanager
    def phase(self, phase: PhaseKind) -> Iterator[Progress]:
        """Started, advanced by the loop, and ended also when the work inside raises."""
        key = next(self._keys)
        self.notify(PhaseStarted(key, phase))
        try:
            yield Progress(self.notify, key)
        finally:
            self.notify(PhaseEnded(key))
