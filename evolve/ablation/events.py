"""What an ablation tells its trackers: event records, the observer base, and the fan-out.

The ablation runs its (arm, seed) evolutions and summarizes them; it emits an event at each point a tracker records
something (the ablation started or resumed, an evolution finished, the summary was written, the ablation ended), so
it imports no tracker (the tracker's ``make_ablation_observer`` makes its observer). A resume, and every worker of a
spread ablation, emits the events again for what it touches: an observer makes a repeated event a no-op.

The loop's ``Observer`` (``memevo.evolve.events``) is not the base here: its ``notify`` takes the loop's events, and
its candidate links and warm-up have no use in an ablation.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memevo.evolve.ablation.manifest import AblationManifest
    from memevo.evolve.ablation.records import ArmSeedRecord
    from memevo.evolve.ablation.summary import AblationSummary


@dataclass(frozen=True)
class AblationStarted:
    """The manifest is written (a first start) or checked against the config (a resume, each worker)."""


@dataclass(frozen=True)
class EvolutionFinished:
    """An (arm, seed)'s record is saved; also emitted for one finished earlier (a kill may have come before a
    tracker noted it)."""

    record: ArmSeedRecord


@dataclass(frozen=True)
class SummaryReady:
    """The statistics over every (arm, seed) are computed and the tables and plots written."""

    summary: AblationSummary
    outputs: dict[str, Path]


@dataclass(frozen=True)
class AblationEnded:
    """After the summary (``succeeded``), or when a single-process ablation stopped on an error or a signal."""

    succeeded: bool


AblationEvent = AblationStarted | EvolutionFinished | SummaryReady | AblationEnded


@dataclass
class AblationContext:
    """What observers may read beyond the events. The manifest also keeps what a tracker must find again on a
    resume (its run's id, the summary's timestamp): an observer notes it there and saves the manifest."""

    manifest: AblationManifest
    run_dir: Path


class AblationObserver:
    """One consumer of the ablation's events; ``notify`` ignores the events it has no use for."""

    def notify(self, event: AblationEvent) -> None:
        """Handle one event (in the order the ablation emitted them)."""

    def evolution_run(self, folder: Path) -> str | None:
        """The id this observer's records give the evolution in ``folder``, when it keeps one (a tracker does)."""
        return None


class AblationObservers(AblationObserver):
    """The fan-out: each event goes to every observer, in the order they were added."""

    def __init__(self) -> None:
        self.named: dict[str, AblationObserver] = {}

    def add(self, name: str, observer: AblationObserver) -> None:
        self.named[name] = observer

    def notify(self, event: AblationEvent) -> None:
        for observer in self.named.values():
            observer.notify(event)

    def evolution_run(self, folder: Path) -> str | None:
        runs = (observer.evolution_run(folder) for observer in self.named.values())
        return next((run for run in runs if run is not None), None)
