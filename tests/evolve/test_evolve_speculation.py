"""Speculative episodes (``episode.speculate``): more calls, never another result, and a kill resumes to the same one."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from tests.doubles.category_backend import CategoryBackend, category_world
from tests.evolve.test_evolve_loop import CrashingBackend, Killed, WidthBackend, _comparable, _served, evolve

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")

WIDE: dict[str, Any] = {"episode": {"rounds_init": 1, "rounds_update": 1}, "budget": {"generations": 2, "candidates": 2}}


class MixedWidthBackend(WidthBackend):
    """TEST DOUBLE: the width backend whose proposer's first sample helps and the others hurt (``mixed``), so a
    generation's first candidate is kept and the others are not needed."""

    def __init__(self) -> None:
        super().__init__()
        self.proposer_mode = "mixed"


class AgentCrashingBackend(CrashingBackend):
    """TEST DOUBLE: the crashing backend whose kill lands on the first agent call from ``crash_after`` on. Its kill is
    an exception, which a proposer's call takes for a failed proposal (saved in the plan), as a real kill never is."""

    async def chat(self, messages, *, role, **kwargs):  # type: ignore[no-untyped-def]
        if role == "proposer":
            return await CategoryBackend.chat(self, messages, role=role, **kwargs)
        return await super().chat(messages, role=role, **kwargs)


STRATEGIES = {"race": {"acceptance": "sequential"}, "race-at-once": {"acceptance": "sequential", "first_accepted": False},
              "validation-first": {"acceptance": "mean"}}


@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_speculation_spends_calls_and_changes_no_result_trial_or_mlflow_row(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, strategy: str) -> None:
    from tests.evolve.test_evolve_kills import _mlflow_rows, _trials

    monkeypatch.setenv("MEMEVO_CONCURRENCY", "16")
    options: dict[str, Any] = {**WIDE, "strategy": STRATEGIES[strategy], "tracking": {"enabled": True}}
    plain_backend = MixedWidthBackend()
    plain, _ = evolve(tmp_path, "off", plain_backend, **options)
    for level in ("candidate", "generation"):
        backend = MixedWidthBackend()
        speculative, _ = evolve(tmp_path, level, backend, **{**options, "episode": {**WIDE["episode"],
                                                                                    "speculate": level}})
        assert _comparable(speculative) == _comparable(plain), level
        assert _trials(tmp_path / level) == _trials(tmp_path / "off"), level
        assert _mlflow_rows(tmp_path / level) == _mlflow_rows(tmp_path / "off"), level
        assert len(backend.calls) >= len(plain_backend.calls), level
    if STRATEGIES[strategy].get("first_accepted", True):  # one at a time: a whole generation at once plays candidates
        assert len(backend.calls) > len(plain_backend.calls)  # not needed (racing all at once, every candidate plays)


@pytest.mark.parametrize("fraction", [0.3, 0.55, 0.8])
@pytest.mark.parametrize("strategy", ["race", "validation-first"])
def test_a_killed_speculative_run_resumes_to_the_result_of_one_without_speculation(
        tmp_path: Path, fraction: float, strategy: str) -> None:
    world = category_world(6, 3)
    plain, _ = evolve(tmp_path, "plain", CategoryBackend(world, proposer_mode="step"), strategy=STRATEGIES[strategy],
                      **WIDE)
    options: dict[str, Any] = {**WIDE, "strategy": STRATEGIES[strategy],
                               "episode": {**WIDE["episode"], "speculate": "generation"}}
    _, full_backend = evolve(tmp_path, "whole", CategoryBackend(world, proposer_mode="step"), **options)
    killed_backend = AgentCrashingBackend(world, proposer_mode="step",
                                          crash_after=int(len(full_backend.calls) * fraction))
    with pytest.raises(Killed):
        evolve(tmp_path, "killed", killed_backend, **options)
    for thread in threading.enumerate():  # a killed process's start-up thread dies with it; this one is only left
        if thread.name == "memevo-deferred-start":
            thread.join()
    resumed_backend = CategoryBackend(world, proposer_mode="step")
    resumed, _ = evolve(tmp_path, "killed", resumed_backend, resume=True, **options)
    assert _comparable(resumed) == _comparable(plain)
    assert resumed.usage.total() == _served(killed_backend, resumed_backend)


def test_a_call_budget_turns_speculation_off(tmp_path: Path) -> None:
    """Speculative calls would move where a spend budget stops the run: under one, the calls are those without."""
    budget = {**WIDE["budget"], "max_calls": 10_000}
    _, plain = evolve(tmp_path, "plain", strategy=STRATEGIES["race"], **{**WIDE, "budget": budget})
    _, speculative = evolve(tmp_path, "speculative", strategy=STRATEGIES["race"],
                            **{**WIDE, "budget": budget, "episode": {**WIDE["episode"], "speculate": "generation"}})
    assert len(speculative.calls) == len(plain.calls)
    assert not (tmp_path / "speculative" / "speculative").exists()
