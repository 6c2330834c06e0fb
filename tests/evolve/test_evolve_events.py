"""The loop's events: the fan-out's order, phases that end also on an error, the candidate scheduler, and a new
tracker added as one module plus one registry entry."""

from __future__ import annotations

import logging
from pathlib import Path

import optuna
import pytest

from memevo.agents.policy import MemoryPolicy
from memevo.evolve.candidate_costs import saved_cost
from memevo.evolve.candidates import Candidate
from memevo.evolve.decisions import DECISIONS_FILE, GenerationDecisions
from memevo.evolve.events import (
    Event,
    FinalScoringPhase,
    GenerationEnded,
    GenerationPlanned,
    InEpisodeEnded,
    Observer,
    Observers,
    PhaseAdvanced,
    PhaseEnded,
    PhaseSkipped,
    PhaseStarted,
    RunEnded,
    UserEvolved,
)
from memevo.evolve.scheduling import CandidateRun, CandidateScheduler
from tests.doubles import recording_observer, recording_tracker
from tests.evolve.test_evolve_loop import SEED_TYPES, evolve

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")
RECORDING = {"enabled": True, "tracker": recording_tracker.NAME}
"""The run is tracked by the recording double, which the config names."""


class Named(Observer):
    def __init__(self, name: str, seen: list[tuple[str, Event]]) -> None:
        self.name, self.seen = name, seen

    def notify(self, event: Event) -> None:
        self.seen.append((self.name, event))


def test_each_event_reaches_every_observer_in_order_and_a_phase_ends_when_its_work_raises() -> None:
    seen: list[tuple[str, Event]] = []
    fan_out = Observers()
    fan_out.add("first", Named("first", seen))
    fan_out.add("second", Named("second", seen))
    with pytest.raises(RuntimeError), fan_out.phase(FinalScoringPhase(periods=4)) as bar:
        bar.advance()
        bar.skip(0)  # nothing skipped: no event
        raise RuntimeError("the work failed")
    events = [PhaseStarted(0, FinalScoringPhase(4)), PhaseAdvanced(0, 1), PhaseEnded(0)]
    assert seen == [(name, event) for event in events for name in ("first", "second")]


class SpentAfter:
    """A budget keeper double: spent once ``allowed`` candidates have asked."""

    def __init__(self, allowed: int) -> None:
        self.asked, self.allowed = 0, allowed

    def spent(self) -> str | None:
        self.asked += 1
        return "call budget (3)" if self.asked > self.allowed else None


def _candidates(n: int) -> list[Candidate]:
    seed = Candidate(policy=MemoryPolicy(kind="awi", prompts={"memory_types": SEED_TYPES}))
    return [seed.model_copy(update={"index": i, "generation": 1}) for i in range(n)]


class Bar:
    def __init__(self) -> None:
        self.advanced, self.skipped = 0, 0

    def advance(self, units: int = 1) -> None:
        self.advanced += units

    def skip(self, units: int) -> None:
        self.skipped += units


async def test_the_scheduler_starts_only_what_the_budget_allows_and_one_at_a_time_stops_at_the_first_accepted() -> None:
    ran: list[int] = []

    async def run_one(candidate: Candidate) -> CandidateRun:
        ran.append(candidate.index)
        return CandidateRun(train=None)

    bar = Bar()
    scheduler = CandidateScheduler(SpentAfter(2), concurrency=1, started=lambda _: False)  # type: ignore[arg-type]
    scheduled = await scheduler.run(_candidates(4), run_one, bar)  # type: ignore[arg-type]
    assert ran == [0, 1] and scheduled.budget_stop == "call budget (3)"
    assert [run is None for run in scheduled.runs] == [False, False, True, True] and bar.advanced == 2

    async def accept_the_second(candidate: Candidate, result: CandidateRun) -> tuple[CandidateRun, bool]:
        return result, candidate.index == 1

    ran.clear()
    bar = Bar()
    scheduler = CandidateScheduler(SpentAfter(0), concurrency=None, started=lambda _: True)  # type: ignore[arg-type]
    scheduled = await scheduler.run(_candidates(4), run_one, bar, settle=accept_the_second)  # type: ignore[arg-type]
    assert ran == [0, 1] and len(scheduled.runs) == 2 and scheduled.budget_stop is None  # started before: continues
    assert (bar.advanced, bar.skipped) == (2, 2)


def test_a_new_tracker_is_one_module_and_one_registry_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recording_tracker.register(monkeypatch)
    recording_observer.RECORDED.clear()
    result, _ = evolve(tmp_path, "recorded", budget={"generations": 2, "candidates": 2}, tracking=RECORDING)
    events = recording_observer.RECORDED
    ended = [event.outcome for event in events if isinstance(event, GenerationEnded)]
    assert ended == result.history  # each generation once, in order, as the run's result holds them
    assert [event.plan.generation for event in events if isinstance(event, GenerationPlanned)] == [1, 2]
    assert isinstance(events[-1], RunEnded) and events[-1].result == result
    started = [event.key for event in events if isinstance(event, PhaseStarted)]
    assert started and started == sorted(started)
    assert sorted(started) == sorted(event.key for event in events if isinstance(event, PhaseEnded))
    assert not [event for event in events if isinstance(event, PhaseSkipped) and event.units <= 0]
    study = optuna.load_study(study_name="test-evolution", storage=f"sqlite:///{tmp_path / 'recorded' / 'optuna.db'}")
    links = {trial.user_attrs.get("recorded_run") for trial in study.trials if trial.user_attrs.get("candidate")}
    assert links and all(str(link).startswith("recorded-g") for link in links)  # the trial names the tracker's run
    assert not (tmp_path / "recorded" / "mlflow.db").exists()
    for event in events:  # what an observer reads of a generation is the run folder's, handed over as records
        if isinstance(event, GenerationEnded):
            gen_dir = tmp_path / "recorded" / "generations" / f"gen_{event.outcome.generation:03d}"
            assert event.decisions == GenerationDecisions.model_validate_json((gen_dir / DECISIONS_FILE).read_text())
            planned = [*(candidate.id for candidate, _ in event.ran), *(c.id for c in event.never_run)]
            assert list(event.records) == planned == [d.candidate_id for d in event.decisions.decisions]
            assert all(event.records[candidate.id].cost.calls > 0 for candidate, _ in event.ran)
    assert set(events[-1].costs) == {result.seed.id, result.best.id}
    assert all(cost == saved_cost(tmp_path / "recorded", cid) for cid, cost in events[-1].costs.items())


def test_in_episode_evolution_tells_observers_each_step_and_its_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    recording_tracker.register(monkeypatch)
    recording_observer.RECORDED.clear()
    with caplog.at_level(logging.INFO, logger="memevo.evolve"):
        result, _ = evolve(tmp_path, "period", protocol="amemgym_period", split={"train": 0, "val": 0, "test": 2},
                           tracking=RECORDING)
    lines = [record.getMessage() for record in caplog.records]
    assert any(line.endswith("period 0: evolved ['memory_types'] (0 rejected)") for line in lines)  # the terminal's
    assert any(line.startswith("in-episode evolution, test accuracy: seed ") and " -> evolving " in line
               for line in lines)
    events = recording_observer.RECORDED
    steps = sorted((event.step.user_id, event.step.period) for event in events if isinstance(event, UserEvolved))
    saved = sorted((tmp_path / "period" / "in_episode").glob("user-*/period_*.json"))
    assert len(steps) == len(saved) == 4 and {period for _, period in steps} == {0, 1}  # never after the last
    assert events[-1] == InEpisodeEnded(result) and not any(isinstance(event, RunEnded) for event in events)
    recording_observer.RECORDED.clear()
    evolve(tmp_path, "period", resume=True, protocol="amemgym_period", split={"train": 0, "val": 0, "test": 2},
           tracking=RECORDING)
    assert recording_observer.RECORDED == [InEpisodeEnded(result)]  # restored steps are not told again
