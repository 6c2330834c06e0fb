"""Evolution benchmark: how close an evolution runs to its endpoint's floor; calls saved by pruning; concurrency.

Everything runs through the real ``LLMHub``/gateway over HTTP against an in-process OpenAI-compatible
endpoint with injected latency (tests/doubles/fault_server.py) that answers like the category double
(tests/doubles/category_backend.py), so the agent's memory depends on its prompt and the proposer's
first sample helps while its other samples hurt (``mixed`` mode).

0. Speed (``--part speed``, the default): at each ``--latencies`` value (the last one on a smaller run,
   ``--small-from``) the ``--strategies`` rows: the default strategy (the sequential race, one candidate at a time),
   with speculative episodes (``episode.speculate`` candidate, generation: the time/calls trade), all candidates in
   the race at once (``first_accepted`` off), and validation first with the mean rule without and with speculation.
   Per run: LLM calls; speculative calls wasted (the calls over those of the same row without speculation, which
   makes the same needed calls: results do not depend on speculation); sequential waits (seconds with at least one
   request in flight at the endpoint, over the latency); mean requests in flight while any is; wall time; the floor,
   the larger of calls x latency / width and the longest chain of dependent calls x latency, the chain measured from
   the run folder's records (``FLOOR_RULE``, printed with the table, with each run's longest path: for the race
   without speculation it follows the race's decision order, rounds after rounds, the best's test after the last
   race); and wall / floor. A run faster than its floor means the floor is wrong: the table says so and the
   benchmark exits with status 1.
   ``--part startup``: ``memevo evolve`` as a child process (tracking on, a fresh run folder): seconds from its
   launch to its first request at the endpoint, then a ``--resume`` of the finished run: its wall time. With
   ``--baseline`` (another checkout's ``memevo``) each try launches both, one after the other, and the last line
   gives this one's median first request over the baseline's.
1. Pruning: the same evolution with the median pruner and without; agent calls (requests that reached
   the endpoint for the agent role) and the best validation score of each.
2. Concurrency: the same evolution (K candidates, tuned hyperparameters) with candidates evaluated one
   at a time and all at once; wall time of each.

Run: ``nice python benchmarks/evolve.py [--part speed|startup|pruning|concurrency] [--latencies 0.02 0.2 1]
[--strategies default spec-candidate ...] [--baseline ../main/.venv/bin/memevo]`` from the repository root.
Measured 2026-11-26 on the shared 2-core box (load ~10): pruning saved 24% of agent calls (612 -> 468)
at equal best validation score (1.000); concurrency x1.76 (candidates) and x2.32 (candidates + users).
Start, 2026-11-27 (same box, niced, load 11-12, ``--part startup --repeats 4 --baseline`` = main at db5e0a4, run
alternately): first request of ``memevo evolve`` median 18.5 -> 4.7 s (x0.26; Optuna's study, MLflow's store, DSPy and
scipy.stats no longer before it); in-process (speed part) 0.5-1.1 -> 0.04-0.13 s.
Speed, 2026-11-27 (same box, niced, load 9.3 then 7.6, the 0.02 s rows beside other tests: CPU-bound, noisy), the chain
measured from the records (25 waits per 3-period episode, 17 per 2-period one): wall/floor at 0.2 s 3.06 (default),
2.01 with speculation per candidate (+214 calls, +35%), 1.88 per generation (+274); at 1 s (smaller run) 2.28, 1.26
(+0 calls: the first candidate was kept) and 1.33 (+140); validation first 3.07 -> 2.87 (0.2 s) and 2.24 -> 1.31 (1 s).
At 0.2 s the floor's path ends at generation 2's proposal: its one candidate repeats generation 1's second, not needed
there, whose episodes a schedule could have played then; a run still plays it after generation 2's proposal.
Speed, 2026-11-29 (same box, niced, load 12.1 then 9.4, ``--strategies default --latencies 0.2 1``), after the
generation strategies split and the repeat fix (a known policy is resampled, never raced again): 0.2 s 510 calls,
wall 50.1 s, floor 10.4 s (chain 52 waits), wall/floor 4.82, 3.3 requests in flight; main at 31cb145 right after,
same load: 616 calls, 50.5 s, 4.85. At 1 s (smaller run): 338 calls, 78.4 s, floor 35.0 s, 2.24. The rounds of a race
still wait for one another (the floor did not count that order then), so the default stayed above 2x its floor.
Speed, 2026-11-29 later (same box, niced, load 21 to 12 with CI beside it): the chain now follows the race's decision
order without speculation (``FLOOR_RULE``): 77 waits at 0.2 s (52 before), 52 at 1 s (35). The default with the
end's test users started when the last race decided, against without (the same code with that start turned off, run
alternately): 0.2 s 510 calls both, wall 32.4 -> 29.4 s, wall/floor 2.11 -> 1.91 (floor 15.4 s); 1 s 338 calls both,
78.9 -> 63.4 s, 1.52 -> 1.22 (floor 52.0 s). ``--strategies default spec-candidate spec-generation --latencies 0.2 1``
right after (load 12-13): default 33.9 s, 2.20 (0.2 s) and 61.6 s, 1.18 (1 s); speculation per candidate 22.6 s (510
calls) and 45.7 s (338), per generation 22.5 s (+136 calls) and 49.1 s (+121), their floors without the decision
order (10.4 and 35.0 s). At 0.2 s the default is at 2x its floor within the box's noise (1.91 to 2.20): the kept
candidate's validation users still play before the next generation starts (its outcome, its spend row and Optuna's
tell wait for them: one episode chain, 25 waits, that the floor does not count, and that speculation per candidate
overlaps with the race), and on the busy box the episodes take longer than their chains (135 sequential waits
against 77 + 25), with idle gaps where the loop computes (Optuna's SQLite, tiktoken's first load: 1-2 s each).
Speed, 2026-11-29 10:40 UTC on the idle box (load 1.0 at the start, 0.4 at the end; main at the merge of every
branch of that session, ``--part speed --strategies default --latencies 0.2 1``): 0.2 s 510 calls, wall 25.6 s, floor
15.4 s (chain 77), wall/floor 1.66, 4.3 requests in flight; 1 s 338 calls, 58.1 s, floor 52.0 s (chain 52), 1.12.
The default is within 2x its floor at both latencies when the box is idle; the busy-box figures above are the same
code's under load.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memevo.agents.llm.hub import LLMHub  # noqa: E402
from memevo.environments.amemgym.data.io import save_items  # noqa: E402
from memevo.environments.records import EpisodeResult  # noqa: E402
from memevo.environments.store import RunStore  # noqa: E402
from memevo.evolve.config import parse_evolve_config  # noqa: E402
from memevo.evolve.loop import EvolutionResult, run_evolution  # noqa: E402
from memevo.evolve.records import GenerationOutcome, GenerationPlan, read_record  # noqa: E402
from memevo.evolve.selection.race import RaceRecord  # noqa: E402
from tests.doubles.category_backend import CategoryBackend, category_world  # noqa: E402
from tests.doubles.fault_server import FaultServer  # noqa: E402

WIDTH = 16
"""Requests in flight the endpoint allows (``llm.max_concurrency``)."""


class TimedServer(FaultServer):
    """The fault server, also noting when each request was in flight (seconds since ``mark``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.spans: list[tuple[float, float]] = []
        self._starts: dict[int, float] = {}
        self._span_lock = threading.Lock()
        # a cancelled call (a speculative episode's) resets its connection: not an error of the run
        self._server.handle_error = lambda request, client_address: None  # type: ignore[method-assign]

    def _begin(self, body: dict[str, Any], headers: dict[str, str], path: str = "") -> Any:
        with self._span_lock:
            self._starts[threading.get_ident()] = time.perf_counter()
        return super()._begin(body, headers, path)

    def _end(self) -> None:
        super()._end()
        with self._span_lock:
            self.spans.append((self._starts.pop(threading.get_ident()), time.perf_counter()))


@dataclass
class SpeedRow:
    """One run of the speed table."""

    label: str
    latency: float
    calls: int
    waits: float
    in_flight: float
    wall: float
    calls_floor: float
    chain: Chain | str
    first_request: float

    @property
    def floor(self) -> float:
        chain = self.chain.waits * self.latency if isinstance(self.chain, Chain) else 0.0
        return max(self.calls_floor, chain)


def busy_seconds(spans: list[tuple[float, float]]) -> float:
    """Seconds with at least one request in flight (the union of the spans)."""
    busy, reach = 0.0, float("-inf")
    for start, end in sorted(spans):
        if end > reach:
            busy += end - max(start, reach)
            reach = end
    return busy


EPISODE_RULE = (
    "Within an episode, per period: one reply per round, and the memory writes (requests and retries, each reading "
    "the memory the one before it wrote); with the LLM simulator, whose follow-ups are calls, as many writes as there "
    "are follow-ups may overlap them (the next reply needs both), while the template simulator's follow-ups make no "
    "call and are no wait; plus one wave for the last period's questions (asked at once; an earlier period's "
    "questions could overlap the next period). A proposal is one wait when the generation's proposer made calls "
    "(samples and components could go at once) and needs at least one of its parent's train episodes (its evidence).")
FLOOR_RULE = (
    "chain = the longest path of calls that depend on one another, counted from the run folder's records. "
    f"{EPISODE_RULE} The race without speculation (race.json, episode.speculate off), a lower bound of any schedule "
    "that starts a call only once it is known to be needed (the same calls and decisions, none speculative): the "
    "seed's episodes start at 0; a generation's proposal once its parent is known (the previous race decided) and "
    "its evidence ended (a winner's episodes in its race started with their round, its others after its race "
    "decided); a race's first round starts after the proposal, each later round after the round before it was "
    "decided (it needs every episode of that round: whether the next round runs depends on them), and under "
    "first_accepted a generation's next race after the race before it was decided; a round lasts as long as its "
    "candidates' longest new episode (the parent's are not counted: it may have played them earlier); after a race "
    "decided, its winner's other episodes (validation users, train evidence); the best's test episodes after the "
    "last race decided (the seed's at 0). Not counted: the tuner's dependence on earlier trials' values, a "
    "merge proposer's on validation values, and the bookkeeping order (a generation's outcome and spend row before "
    "the next generation starts). Other strategies and speculative runs: a candidate's episodes start after its "
    "first proposal (one proposed again later could have been played then), which comes after its parent's "
    "evidence; the seed's start at 0; a generation's proposal is on the path too; the order the strategy decides "
    "in (race rounds, train check after validation, test after the choice of the best) is not counted: a schedule "
    "that knew the outcome could run them at once, as speculation does at the price of calls.")
"""How the speed table's chain term of the floor is counted (printed with the table)."""


@dataclass
class Chain:
    waits: int
    path: str
    """The longest path, part by part."""
    unrecorded_writes: int
    """Episodes whose memory writes were not recorded (counted as none: the chain is still a lower bound)."""


def episode_chain(episode: EpisodeResult, simulator_calls: bool) -> tuple[int, bool]:
    """Calls of one stored episode that depend on one another (see ``EPISODE_RULE``; ``simulator_calls``: the
    simulator's follow-ups are calls), and whether its writes were recorded."""
    waits, recorded = 0, True
    for period in episode.periods:
        rounds = [len(transcript) // 2 for transcript in period.transcripts]
        follow_ups = sum(max(0, count - 1) for count in rounds) if simulator_calls else 0
        writes = 0
        if period.memory_writes is None:
            recorded = False
        else:
            writes = period.memory_writes.requests + period.memory_writes.retries
        waits += sum(rounds) + max(follow_ups, writes)
    return waits + bool(episode.periods), recorded


Episodes = dict[str, dict[str, tuple[int, bool]]]
"""Per split store of a candidate, per user, the chain of its stored episode and whether its writes were recorded."""


def stored_chains(evals: Path, candidate_id: str, simulator_calls: bool) -> Episodes:
    """Per split store of a candidate, the chains of its stored episodes."""
    chains: Episodes = {}
    for split_dir in sorted(path for path in (evals / candidate_id).glob("*") if path.is_dir()):
        store = RunStore(split_dir)
        for meta in sorted(split_dir.glob("users/*/meta.json")):
            user_id = json.loads(meta.read_text())["user_id"]
            episode = store.load_episode(user_id)
            if episode is not None and episode.periods:
                chains.setdefault(split_dir.name, {})[user_id] = episode_chain(episode, simulator_calls)
    return chains


def proposer_calls(run_dir: Path, generation: int) -> int | None:
    """Proposer calls made in a generation (its ``spend.json`` less the one before), None when not recorded."""
    def calls(gen: int) -> int | None:
        path = run_dir / "generations" / f"gen_{gen:03d}" / "spend.json"
        if not path.exists():
            return None
        return int(json.loads(path.read_text())["by_role"].get("proposer", {}).get("calls", 0))

    now, before = calls(generation), calls(generation - 1)
    return None if now is None or before is None else now - before


@dataclass
class RunRecords:
    """What the chain is counted from, read from a finished run's folder."""

    seed_id: str
    plans: dict[int, GenerationPlan]
    races: dict[int, list[RaceRecord]]
    """Per generation, its races in the order they ran (none: the generation did not race)."""
    proposals: dict[int, int]
    """Per generation, the waits of its proposal (1 when its proposer made calls or they were not recorded)."""
    episodes: dict[str, Episodes]
    """Per candidate id, its stored episodes' chains."""
    best_id: str | None
    speculative: bool
    """Whether speculative episodes could run (``episode.speculate`` in effect)."""


def read_run(run_dir: Path) -> RunRecords | str:
    """The records the chain needs, or why they are not there."""
    zero = read_record(run_dir / "generations" / "gen_000" / "outcome.json", GenerationOutcome)
    if zero is None:
        return "n/a (no generation 0 outcome in the run folder)"
    plans = {plan.generation: plan for path in sorted(run_dir.glob("generations/gen_*/plan.json"))
             if (plan := read_record(path, GenerationPlan)) is not None}
    races = {generation: [RaceRecord.model_validate(race) for race in json.loads(path.read_text())]
             for generation in plans if (path := run_dir / "generations" / f"gen_{generation:03d}" / "race.json").exists()}
    settings = json.loads((run_dir / "config.json").read_text())
    capped = any(settings["budget"].get(cap) is not None for cap in ("max_calls", "max_tokens", "max_dollars"))
    simulator_calls = settings["episode"]["simulator"] == "llm"
    evals = run_dir / "evals"
    result = read_record(run_dir / "result.json", EvolutionResult)
    return RunRecords(
        seed_id=zero.parent_id, plans=plans, races=races,
        proposals={generation: int(calls is None or calls > 0)
                   for generation in plans for calls in [proposer_calls(run_dir, generation)]},
        episodes={path.name: stored_chains(evals, path.name, simulator_calls) for path in sorted(evals.glob("*"))
                  if path.is_dir()},
        best_id=None if result is None else result.best.id,
        speculative=settings["episode"]["speculate"] != "off" and not capped)


def unrecorded(records: RunRecords) -> int:
    return sum(not recorded for by_split in records.episodes.values() for by_user in by_split.values()
               for _, recorded in by_user.values())


def run_chain(run_dir: Path) -> Chain | str:
    """The chain term of the floor from a finished run's folder (``FLOOR_RULE``), or why it cannot be counted."""
    records = read_run(run_dir)
    if isinstance(records, str):
        return records
    raced = records.races and not records.speculative
    waits, path = race_path(records) if raced else free_path(records)
    return Chain(waits=waits, path=path, unrecorded_writes=unrecorded(records))


Step = tuple[int, str]
"""A point on a path: waits since the start, and the path that reaches it."""


def longest(episodes: Episodes, users: list[str] | None = None) -> int:
    """The longest chain among a candidate's episodes (of these users, when given), 0 for none."""
    return max((waits for by_user in episodes.values() for user, (waits, _) in by_user.items()
                if users is None or user in users), default=0)


def race_path(records: RunRecords) -> Step:
    """The longest path of a race run without speculation (``FLOOR_RULE``)."""
    seed = records.seed_id
    begun: dict[str, dict[str, Step]] = {seed: {}}
    """Per candidate, where its episodes on these users could start at the earliest."""
    settled: dict[str, Step] = {seed: (0, "seed")}
    """Per candidate, where its other episodes could start: the seed at 0, a winner once its race decided."""
    ends: list[Step] = []

    def start(candidate_id: str, user: str) -> Step:
        return begun.get(candidate_id, {}).get(user) or settled[candidate_id]

    def after(step: Step, waits: int, part: str) -> Step:
        return step[0] + waits, f"{step[1]} -> {part} {waits}"

    decided: Step = (0, "seed")
    for generation, plan in sorted(records.plans.items()):
        parent = plan.parent_id
        evidence = [after(start(parent, user), waits, f"{parent[:8]} train episode")
                    for user, (waits, _) in records.episodes.get(parent, {}).get("train", {}).items()]
        ready = max([decided, min(evidence, default=decided)])
        step = after(ready, records.proposals.get(generation, 1), f"g{generation} proposal")
        ends.append(step)
        for number, race in enumerate(records.races.get(generation, []), 1):
            played: list[str] = []
            for round_number, round_ in enumerate(race.rounds, 1):
                new = [user for user in round_.users if user not in played]
                for candidate_id in round_.verdicts:
                    begun.setdefault(candidate_id, {}).update({user: step for user in new})
                waits = max((longest(records.episodes.get(candidate_id, {}), new) for candidate_id in round_.verdicts),
                            default=0)
                step = after(step, waits, f"g{generation} race {number} round {round_number}")
                ends.append(step)
                played = round_.users
            if race.winner_id is not None:
                settled[race.winner_id] = step
                searched = records.episodes.get(race.winner_id, {})
                others = {split: {user: chain for user, chain in searched.get(split, {}).items()
                                  if user not in begun[race.winner_id]} for split in ("train", "val")}
                ends.append(after(step, longest(others), "winner's other episodes"))
        decided = step
    seed_test = records.episodes.get(seed, {}).get("test", {})
    ends.append(after((0, "seed"), longest({"test": seed_test}), "seed test"))
    if records.best_id is not None and records.best_id != seed:
        best_test = {"test": records.episodes.get(records.best_id, {}).get("test", {})}
        ends.append(after(decided, longest(best_test), "best test"))
    return max(ends)


def free_path(records: RunRecords) -> Step:
    """The longest path when the strategy's decision order is not counted (``FLOOR_RULE``: other strategies,
    speculation)."""
    proposed: dict[str, int] = {}  # a candidate proposed again later could have been played after its first proposal
    for plan in records.plans.values():
        for candidate in plan.candidates:
            proposed.setdefault(candidate.id, plan.generation)
    starts: dict[str, Step] = {records.seed_id: (0, "seed")}

    def proposal_end(generation: int) -> Step:
        parent_id = records.plans[generation].parent_id
        before, path = start(parent_id)
        train = records.episodes.get(parent_id, {}).get("train", {})
        evidence = min((waits for waits, _ in train.values()), default=0)
        proposal = records.proposals.get(generation, 1)
        return before + evidence + proposal, f"{path} {evidence} -> g{generation} proposal {proposal}"

    def start(candidate_id: str) -> Step:
        if candidate_id not in starts:
            end, path = proposal_end(proposed[candidate_id])
            starts[candidate_id] = (end, f"{path} -> {candidate_id[:8]}")
        return starts[candidate_id]

    best: Step = max((proposal_end(generation) for generation in records.plans), default=(0, "no proposal"))
    for candidate_id, by_split in records.episodes.items():
        if candidate_id not in starts and candidate_id not in proposed:
            continue  # not a candidate of this run's plans (none such is expected)
        offset, path = start(candidate_id)
        for split, episodes in by_split.items():
            waits = max(waits for waits, _ in episodes.values())
            best = max(best, (offset + waits, f"{path} {split} episode {waits}"))
    return best


def speed_run(data: Path, latency: float, workdir: Path, name: str, **overrides: Any) -> SpeedRow:
    backend = CategoryBackend(category_world(8, 3), proposer_mode="mixed")
    server = TimedServer(backend.http_reply, latency_s=latency)
    with server, LLMHub(cache_dir=workdir / f"cache-{name}", use_cache=False) as hub:
        started = time.perf_counter()
        run_evolution(config(data, server.url, **overrides), run_dir=workdir / name, hub=hub, resume=False)
        wall = time.perf_counter() - started
        calls = hub.accounting.report().total().calls
    busy = busy_seconds(server.spans)
    return SpeedRow(label=name, latency=latency, calls=calls, waits=busy / latency,
                    in_flight=sum(end - start for start, end in server.spans) / busy, wall=wall,
                    calls_floor=calls * latency / WIDTH, chain=run_chain(workdir / name),
                    first_request=min(start for start, _ in server.spans) - started)


SPEED_RUN: dict[str, Any] = {
    "split": {"train": 3, "val": 3, "test": 2}, "budget": {"generations": 2, "candidates": 2},
    "episode": {"rounds_init": 1, "rounds_update": 1}, "optuna": {"pruner": "median", "n_startup_trials": 1},
}
"""8 users, 2 generations x 2 candidates, the default strategy, users and candidates as wide as the endpoint."""
SMALL_RUN: dict[str, Any] = {**SPEED_RUN, "budget": {"generations": 1, "candidates": 2},
                             "episode": {"rounds_init": 1, "rounds_update": 1, "max_periods": 2}}
"""The run at high latency: 1 generation, 2 periods per user."""


STRATEGIES: dict[str, dict[str, Any]] = {
    "default": {},
    "spec-candidate": {"episode": {"speculate": "candidate"}},
    "spec-generation": {"episode": {"speculate": "generation"}},
    "all-at-once": {"strategy": {"first_accepted": False}},
    "val-first": {"strategy": {"acceptance": "mean"}},
    "val-first-spec": {"strategy": {"acceptance": "mean"}, "episode": {"speculate": "generation"}},
}
"""The speed table's rows per latency, as config overrides: the default (the sequential race, one candidate at a time),
with speculative episodes (``episode.speculate``: the time/calls trade), all candidates in the race at once (first_accepted
off), and validation first with the mean rule, without and with speculation."""
WITHOUT_SPECULATION = {"spec-candidate": "default", "spec-generation": "default", "val-first-spec": "val-first"}
"""The row that makes the same needed calls: a speculative row's extra calls are its speculative calls wasted."""


def speed_table(data: Path, workdir: Path, latencies: list[float], small_from: float, strategies: list[str]) -> list[str]:
    """Print the speed table; the runs that beat their floor (a floor above the wall is not a lower bound)."""
    print(f"speed: {', '.join(strategies)}; width {WIDTH}; load "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at the start")
    print(f"floor = max(calls x latency / width, chain x latency); {FLOOR_RULE}")
    print("| run | latency s | calls | speculative calls wasted | sequential waits | mean in flight | wall s "
          "| floor: calls x latency / width s | floor: chain waits | floor: chain x latency s | wall/floor "
          "| first request s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    paths, beaten = [], []
    for latency in latencies:
        base = SMALL_RUN if latency >= small_from else SPEED_RUN
        calls: dict[str, int] = {}
        for strategy in strategies:
            chosen = STRATEGIES[strategy]
            overrides = {**base, "strategy": chosen.get("strategy", {}),
                         "episode": {**base["episode"], "user_concurrency": None, "candidate_concurrency": None,
                                     **chosen.get("episode", {})}}
            name = f"{strategy}-{latency:g}" + ("-small" if base is SMALL_RUN else "")
            row = speed_run(data, latency, workdir, name, **overrides)
            calls[strategy] = row.calls
            plain = WITHOUT_SPECULATION.get(strategy)
            wasted = ("0" if plain is None else str(row.calls - calls[plain]) if plain in calls
                      else f"n/a ({plain} not run)")
            if isinstance(row.chain, Chain):
                chain_cells = f"{row.chain.waits} | {row.chain.waits * latency:.1f}"
                paths.append(f"{name}: {row.chain.path}" + (f" ({row.chain.unrecorded_writes} episode(s) without "
                             "recorded writes, counted as none)" if row.chain.unrecorded_writes else ""))
            else:
                chain_cells = f"{row.chain} | {row.chain}"
            print(f"| {name} | {latency:g} | {row.calls} | {wasted} | {row.waits:.0f} | {row.in_flight:.1f} | "
                  f"{row.wall:.1f} | {row.calls_floor:.1f} | {chain_cells} | {row.wall / row.floor:.2f} | "
                  f"{row.first_request:.2f} |", flush=True)
            if row.wall < row.floor:
                beaten.append(name)
    print("longest chains (waits along the path):")
    for path in paths:
        print(f"  {path}")
    print(f"load {os.getloadavg()[0]:.1f} at the end")
    if beaten:
        print(f"wall below the floor in {', '.join(beaten)}: the floor rule is wrong (not a lower bound)")
    return beaten


def startup(data: Path, workdir: Path, repeats: int, executables: dict[str, str]) -> None:
    """``memevo evolve`` launched as a command: its first request, and a resume of the finished run; with a baseline,
    each try runs both executables one after the other, so both see the same load."""
    import statistics
    import subprocess

    import yaml

    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "1"}
    print(f"startup: memevo evolve as a command, tracking on; load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| try | executable | first request s | wall s | resume of the finished run s |")
    print("|---|---|---|---|---|")
    firsts: dict[str, list[float]] = {name: [] for name in executables}
    for attempt in range(repeats):
        for name, memevo in executables.items():
            backend = CategoryBackend(category_world(8, 3), proposer_mode="mixed")
            server = TimedServer(backend.http_reply, latency_s=0.02)
            with server:
                settings = config(data, server.url, **{**SMALL_RUN, "tracking": {"enabled": True}}).model_dump(
                    mode="json", exclude_none=True, exclude_unset=True)
                path = workdir / f"startup-{name}-{attempt}.yaml"
                path.write_text(yaml.safe_dump(settings), encoding="utf-8")
                run_dir = workdir / f"startup-{name}-{attempt}"
                command = [memevo, "evolve", str(path), "--run-dir", str(run_dir)]
                started = time.perf_counter()
                subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                wall = time.perf_counter() - started
                firsts[name].append(min(start for start, _ in server.spans) - started)
                started = time.perf_counter()
                subprocess.run([*command, "--resume"], check=True, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
                print(f"| {attempt} | {name} | {firsts[name][-1]:.2f} | {wall:.1f} | {time.perf_counter() - started:.1f} |",
                      flush=True)
    medians = {name: statistics.median(values) for name, values in firsts.items()}
    print("median first request s: " + ", ".join(f"{name} {value:.2f}" for name, value in medians.items()) +
          (f"; this / baseline {medians['this'] / medians['baseline']:.2f}" if "baseline" in medians else "") +
          f"; load {os.getloadavg()[0]:.1f} at the end")


def config(data: Path, url: str, **overrides: Any) -> Any:
    llm = {"model": "category-double", "base_url": url, "max_concurrency": WIDTH, "max_retries": 0}
    base: dict[str, Any] = {
        "name": "bench",
        "seed": {"policy": {"kind": "awi", "update_every": 2, "short_term": 0, "llm": llm,
                            "prompts": {"memory_types": "- commute (how the user gets to work)"}}},
        "components": ["memory_types"],
        "data": {"path": str(data)},
        "split": {"train": 3, "val": 2, "test": 1},
        "budget": {"generations": 2, "candidates": 3},
        "episode": {"rounds_init": 1, "rounds_update": 1, "user_concurrency": 1, "candidate_concurrency": 1},
        "llm": {"proposer": llm},
        "tracking": {"enabled": False},
        "upper_bound": False,
        "objective": "accuracy",
        "optuna": {"n_startup_trials": 1},
    }
    for key, value in overrides.items():
        base[key] = {**base.get(key, {}), **value}
    return parse_evolve_config(base)


def run(data: Path, latency: float, workdir: Path, name: str, **overrides: Any) -> tuple[EvolutionResult, int, float]:
    backend = CategoryBackend(category_world(8, 3), proposer_mode="mixed")  # same users as ``data``
    with FaultServer(backend.http_reply, latency_s=latency) as server, \
            LLMHub(cache_dir=workdir / f"cache-{name}", use_cache=False) as hub:
        started = time.perf_counter()
        result = run_evolution(config(data, server.url, **overrides), run_dir=workdir / name, hub=hub, resume=False)
        elapsed = time.perf_counter() - started
        agent_calls = hub.accounting.report().by_role["agent"].calls
    return result, agent_calls, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("speed", "startup", "pruning", "concurrency"), default="speed")
    parser.add_argument("--repeats", type=int, default=3, help="Launches of the command (startup part).")
    parser.add_argument("--memevo", default=str(Path(sys.executable).with_name("memevo")),
                        help="The memevo executable to launch (startup part).")
    parser.add_argument("--baseline", help="Another memevo executable (another checkout's venv) launched alternately "
                                           "with --memevo (startup part).")
    parser.add_argument("--latencies", type=float, nargs="+", default=[0.02, 0.2, 1.0],
                        help="Injected seconds per request (speed part).")
    parser.add_argument("--strategies", nargs="+", choices=list(STRATEGIES), default=list(STRATEGIES),
                        help="Rows per latency (speed part).")
    parser.add_argument("--small-from", type=float, default=1.0,
                        help="Latencies from this one on run the smaller evolution (speed part).")
    parser.add_argument("--latency", type=float, default=0.02, help="Injected seconds per request (pruning part).")
    parser.add_argument("--concurrency-latency", type=float, default=0.1,
                        help="Injected seconds per request (concurrency part: latency-bound, like a remote API).")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        data = workdir / "data.json"
        save_items(category_world(8, 3), data)
        if args.part == "speed":
            if speed_table(data, workdir, args.latencies, args.small_from, args.strategies):
                sys.exit(1)
        elif args.part == "startup":
            startup(data, workdir, args.repeats,
                    {"this": args.memevo} | ({"baseline": args.baseline} if args.baseline else {}))
        elif args.part == "pruning":
            pruning(data, workdir, args.latency)
        else:
            concurrency(data, workdir, args.concurrency_latency)


def pruning(data: Path, workdir: Path, latency: float) -> None:
    pruned, pruned_calls, _ = run(data, latency, workdir, "median", optuna={"pruner": "median"})
    full, full_calls, _ = run(data, latency, workdir, "none", optuna={"pruner": "none"})
    best = {label: r.history[-1].parent_val for label, r in (("median", pruned), ("none", full))}
    n_pruned = sum(len(g.pruned) for g in pruned.history)
    print(f"pruning: agent calls {full_calls} without -> {pruned_calls} with the median pruner "
          f"({1 - pruned_calls / full_calls:.0%} saved, {n_pruned} candidate(s) pruned); "
          f"best validation score {best['none']:.3f} vs {best['median']:.3f}")


def concurrency(data: Path, workdir: Path, latency: float) -> None:
    tuned = {"hyperparameters": {"update_every": {"choices": [1, 2]}, "short_term": {"choices": [0, 2]}},
             "optuna": {"pruner": "none"}, "budget": {"generations": 1, "candidates": 3},
             "split": {"train": 2, "val": 1, "test": 1}, "episode": {"max_periods": 2},
             "strategy": {"first_accepted": False}}  # a generation's candidates at once
    seq, _, sequential = run(data, latency, workdir, "seq", **tuned)
    _, _, candidates = run(data, latency, workdir, "cand", **{**tuned, "episode": {
        "max_periods": 2, "candidate_concurrency": 3}})
    _, _, everything = run(data, latency, workdir, "all", **{**tuned, "episode": {
        "max_periods": 2, "candidate_concurrency": 3, "user_concurrency": 2}})
    n_candidates = len(seq.history[1].train)
    print(f"concurrency ({latency * 1000:.0f} ms per request, 1 generation, {n_candidates} candidates, "
          f"seed and test evaluations included): sequential {sequential:.1f} s; candidates concurrent "
          f"{candidates:.1f} s (x{sequential / candidates:.2f}); candidates and users concurrent "
          f"{everything:.1f} s (x{sequential / everything:.2f})")

if __name__ == "__main__":
    main()
