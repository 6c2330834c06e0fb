"""A candidate's cost counts the calls made for its episodes only, even with candidates played at once on one hub,
and a resume adds to what an earlier process saved."""

from __future__ import annotations

import asyncio
from pathlib import Path

from memevo.agents.llm.accounting import Accounting, RoleUsage
from memevo.agents.llm.pricing import Pricing
from memevo.evolve.candidate_costs import CandidateCosts, cost_metrics, saved_cost


def _call(hub: Accounting, tokens: int, *, cached: bool = False) -> None:
    hub.record_call("agent", model="local-model", prompt_tokens=tokens, completion_tokens=1, wall_s=0.0,
                    cached=cached, pricing=Pricing())


def test_candidates_played_at_once_are_charged_their_own_calls(tmp_path: Path) -> None:
    hub, costs = Accounting(), CandidateCosts(tmp_path)

    async def episode(candidate_id: str, tokens: int, n: int) -> None:
        with costs.charged(candidate_id):
            for _ in range(n):
                _call(hub, tokens)
                await asyncio.sleep(0)  # the other candidate's episode runs in between

    async def both() -> None:
        await asyncio.gather(episode("a", 10, 3), episode("b", 100, 2))

    asyncio.run(both())
    _call(hub, 1000)  # outside any candidate (a proposal): charged to none

    a, b = costs.total("a"), costs.total("b")
    assert a is not None and b is not None
    assert (a.calls, a.prompt_tokens) == (3, 30) and (b.calls, b.prompt_tokens) == (2, 200)
    assert hub.report().total().calls == 6  # the hub still counts everything once


def test_a_resume_adds_to_the_saved_cost(tmp_path: Path) -> None:
    first = CandidateCosts(tmp_path)
    with first.charged("a"):
        _call(Accounting(), 10)
    first.save("a")
    again = CandidateCosts(tmp_path)
    assert again.total("a") == saved_cost(tmp_path, "a")
    with again.charged("a"):
        _call(Accounting(), 5, cached=True)
    again.save("a")
    saved = saved_cost(tmp_path, "a")
    assert saved is not None and (saved.calls, saved.cache_hits, saved.prompt_tokens) == (2, 1, 15)


def test_cost_metrics_leave_out_cache_hits_and_unknown_dollars() -> None:
    assert cost_metrics(None) == {}
    unpriced = RoleUsage(calls=3, cache_hits=1, prompt_tokens=20, completion_tokens=4, unpriced_calls=2)
    assert cost_metrics(unpriced) == {"cost_calls": 2.0, "cost_tokens": 24.0}
    priced = RoleUsage(calls=2, prompt_tokens=10, dollars=0.5)
    assert cost_metrics(priced) == {"cost_calls": 2.0, "cost_tokens": 10.0, "cost_dollars": 0.5}


def test_two_workers_saving_one_candidates_cost_at_once_lose_neither_count(tmp_path: Path, monkeypatch) -> None:
    import threading
    import time

    from memevo.evolve import candidate_costs

    read = candidate_costs.saved_cost

    def slow_read(run_dir: Path, candidate_id: str) -> RoleUsage | None:
        found = read(run_dir, candidate_id)
        time.sleep(0.2)  # the other worker saves meanwhile, unless the lock keeps it out
        return found

    workers = [CandidateCosts(tmp_path), CandidateCosts(tmp_path)]  # two processes' users of one candidate
    for tokens, worker in zip((10, 100), workers, strict=True):
        with worker.charged("a"):
            _call(Accounting(), tokens)
    monkeypatch.setattr(candidate_costs, "saved_cost", slow_read)
    saves = [threading.Thread(target=worker.save, args=("a",)) for worker in workers]
    for save in saves:
        save.start()
    for save in saves:
        save.join()
    saved = read(tmp_path, "a")
    assert saved is not None and (saved.calls, saved.prompt_tokens) == (2, 110)
