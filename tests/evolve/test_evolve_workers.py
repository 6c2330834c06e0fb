"""Evolve workers without a server: the strategies they refuse, and turns on an SQLite claim store."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from memevo.evolve.workers.claims import ClaimStore
from memevo.evolve.workers.turns import SharedTurns
from memevo.evolve.workers.worker import WorkerSettings
from tests.doubles.worker_evolution import write_evolution


@pytest.mark.parametrize(("overrides", "flags", "field"), [
    ({"strategy": {"acceptance": "mean", "first_accepted": False}, "episode": {"speculate": "candidate"}},
     ["--workers", "2"], "episode.speculate"),
    ({"episode": {"speculate": "generation"}}, ["--store", "sqlite:///claims.db"],
     "episode.speculate"),  # a worker joining with --store alone too
])
def test_speculation_refuses_workers(tmp_path: Path, overrides: dict, flags: list[str], field: str) -> None:
    path = write_evolution(tmp_path, "http://127.0.0.1:9/v1", f"sqlite:///{tmp_path / 'mlflow.db'}", "refused")
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    for key, value in overrides.items():
        config[key] = {**config.get(key, {}), **value} if key == "episode" else value
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "memevo.evolve.cli", "evolve", str(path), "--run-dir",
                           str(tmp_path / "run"), *flags], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"field '{field}'" in lines[0] and str(path) in lines[0], done.stderr
    assert not (tmp_path / "run").exists()  # refused before anything was written


def test_a_turn_is_one_workers_and_a_dead_workers_turn_is_taken_over(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'claims.db'}"

    def turns(name: str) -> SharedTurns:
        settings = WorkerSettings(store=url, name=name, heartbeat_s=0.1, grace_s=0.6, poll_s=0.05)
        return SharedTurns(ClaimStore(url), "job", settings)

    first, second, heir = turns("first"), turns("second"), turns("heir")
    done: list[str] = []

    async def work(worker: SharedTurns, name: str, unit: str) -> bool:
        async with worker.turn(unit) as mine:
            if mine:
                await asyncio.sleep(0.3)
                done.append(f"{name}:{unit}")
            return mine

    async def scene() -> tuple[bool, bool, bool]:
        mine = await asyncio.gather(work(first, "first", "a"), work(second, "second", "a"))
        dead = ClaimStore(url)
        dead.register("job", ["b"])
        assert dead.claim("job", "dead", grace_s=60, units=["b"]) == "b"  # and never beats again
        return (*mine, await work(heir, "heir", "b"))

    first_mine, second_mine, heir_mine = asyncio.run(scene())
    assert sorted([first_mine, second_mine]) == [False, True]  # one did it, the other waited for it
    assert len([entry for entry in done if entry.endswith(":a")]) == 1
    assert heir_mine and "heir:b" in done
    assert ClaimStore(url).claim_counts("job") == {"a": 1, "b": 2}


def test_spread_units_are_played_once_each_at_most_width_at_once_per_worker(tmp_path: Path) -> None:
    from memevo.evolve.user_units import spread

    url = f"sqlite:///{tmp_path / 'claims.db'}"
    workers = [SharedTurns(ClaimStore(url), "job", WorkerSettings(store=url, name=name, poll_s=0.02))
               for name in ("first", "second")]
    played: list[tuple[str, str]] = []
    playing: dict[str, int] = {"first": 0, "second": 0}
    widest: dict[str, int] = {"first": 0, "second": 0}

    def player(worker: str, unit: str) -> Callable[[], Awaitable[None]]:
        async def play() -> None:
            playing[worker] += 1
            widest[worker] = max(widest[worker], playing[worker])
            await asyncio.sleep(0.1)
            played.append((worker, unit))
            playing[worker] -= 1
        return play

    async def scene() -> None:
        await asyncio.gather(*(spread(turns, {f"user-{n}": player(turns.settings.name, f"user-{n}") for n in range(6)},
                                      width=2) for turns in workers))

    asyncio.run(scene())
    assert sorted(unit for _, unit in played) == [f"user-{n}" for n in range(6)]  # each unit once, all done
    assert max(widest.values()) == 2 and {worker for worker, _ in played} == {"first", "second"}
    assert set(ClaimStore(url).states("job").values()) == {"done"}


class _SeedRun:
    """A worker's run in generation 0: its evaluator, and an upper-bound table computed once into ``folder`` (the
    run folder's copy) by the worker that holds its unit, read from there by the others."""

    def __init__(self, folder: dict[str, str]) -> None:
        self.folder = folder
        self.users = ["a", "b", "c"]
        self.seed = SimpleNamespace(id="seed")
        self.evaluator = SimpleNamespace(upper_bound=None, upper_bound_pending=None, episodes=lambda *_: [])

    async def upper_bound_table(self, users: list[str]) -> str:
        if "table" not in self.folder:
            await asyncio.sleep(0.4)  # the bare model's answers
            self.folder["table"] = "table"
        self.evaluator.upper_bound = self.folder["table"]
        return self.folder["table"]


class _SeedPlays:
    """The seed's evaluations on one user each, scored as ``Evaluator.evaluate`` scores: once the pending table is
    there."""

    def __init__(self, run: _SeedRun, worker: str, log: list[tuple[str, str, bool, str | None]]) -> None:
        self.run, self.worker, self.log = run, worker, log
        self.evaluator, self.width = run.evaluator, 2
        self.users = {"train": ["a", "b"], "val": ["c"]}

    async def evaluate(self, candidate: object, split: str, users: list[str]) -> None:
        table_there = "table" in self.run.folder
        await asyncio.sleep(0.1)  # the episode
        if self.evaluator.upper_bound_pending is not None:
            await asyncio.shield(self.evaluator.upper_bound_pending)
        self.log.append((self.worker, users[0], table_there, self.evaluator.upper_bound))


def test_the_seeds_users_play_while_a_worker_computes_the_table_and_are_scored_against_it(tmp_path: Path) -> None:
    from memevo.evolve.user_units import spread_seed

    url = f"sqlite:///{tmp_path / 'claims.db'}"
    folder: dict[str, str] = {}
    log: list[tuple[str, str, bool, str | None]] = []
    strategy = SimpleNamespace(seed_users=lambda: (["a", "b"], ["c"]))

    async def worker(name: str) -> None:
        run = _SeedRun(folder)
        turns = SharedTurns(ClaimStore(url), "job", WorkerSettings(store=url, name=name, poll_s=0.02))
        await spread_seed(turns, run, _SeedPlays(run, name, log), strategy)  # type: ignore[arg-type]
        assert run.evaluator.upper_bound == "table" and run.evaluator.upper_bound_pending is None

    async def scene() -> None:
        await asyncio.gather(worker("first"), worker("second"))

    asyncio.run(scene())
    assert sorted(user for _, user, _, _ in log) == ["a", "b", "c"]  # each user once
    assert not all(table_there for _, _, table_there, _ in log)  # played while the table was being computed
    assert {table for _, _, _, table in log} == {"table"}  # every user scored against it
    assert ClaimStore(url).claim_counts("job") == {"gen-000/upper-bound": 1, "gen-000/seed/train/a": 1,
                                                   "gen-000/seed/train/b": 1, "gen-000/seed/val/c": 1}


def test_workers_judge_the_budget_on_the_usage_of_all_of_them(tmp_path: Path) -> None:
    from memevo.agents.llm.shared_usage import SharedUsage
    from memevo.evolve.config import BudgetConfig
    from memevo.evolve.spend import BudgetKeeper

    url = f"sqlite:///{tmp_path / 'usage.db'}"
    first, second = (SharedUsage(url, "run", name, flush_s=60) for name in ("first", "second"))
    other_run = SharedUsage(url, "another run", "third", flush_s=60)
    try:
        for usage, calls in ((first, 3), (second, 2), (other_run, 9)):
            for _ in range(calls):
                usage.record_call("agent", model="gpt-4.1-mini", prompt_tokens=100, completion_tokens=10, wall_s=0.1,
                                  cached=False)
        keeper = BudgetKeeper(BudgetConfig(max_calls=5), first)
        assert keeper.spent() is None  # the second's calls are not written yet: in flight, as far as others know
        second.flush()  # its background write (every flush_s)
        assert keeper.spent() == "call budget (5)"  # 3 of its own and the second's 2; the other run's are not counted
        total = second.report().total()
        assert (total.calls, total.prompt_tokens, total.completion_tokens) == (5, 500, 50)
        assert total.dollars == pytest.approx(5 * (100 * 0.40 + 10 * 1.60) / 1_000_000)
    finally:
        for usage in (first, second, other_run):
            usage.close()


def test_a_usage_ledger_of_an_earlier_version_gains_the_cancelled_column(tmp_path: Path) -> None:
    import sqlite3

    from memevo.agents.llm.shared_usage import TABLE, SharedUsage

    with sqlite3.connect(tmp_path / "usage.db") as db:  # as the ledger was before cancelled requests were counted
        db.execute(f"CREATE TABLE {TABLE} (job TEXT NOT NULL, worker TEXT NOT NULL, role TEXT NOT NULL, calls DOUBLE "
                   "PRECISION NOT NULL DEFAULT 0, unknown_calls DOUBLE PRECISION NOT NULL DEFAULT 0, PRIMARY KEY "
                   "(job, worker, role))")
        db.execute(f"INSERT INTO {TABLE} VALUES ('run', 'earlier', 'agent', 3, 0)")
    usage = SharedUsage(f"sqlite:///{tmp_path / 'usage.db'}", "run", "now", flush_s=60)
    try:
        usage.book("agent")
        usage.record_cancel("agent")
        total = usage.report().total()
        assert (total.calls, total.unknown_calls, total.cancelled_calls) == (3, 0, 1)
    finally:
        usage.close()
