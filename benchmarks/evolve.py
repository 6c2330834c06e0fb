"""Evolution benchmark: how close an evolution runs to its endpoint's floor; calls saved by pruning; concurrency.

Everything runs through the real ``LLMHub``/gateway over HTTP against an in-process OpenAI-compatible
endpoint with injected latency (tests/doubles/fault_server.py) that answers like the category double
(tests/doubles/category_backend.py), so the agent's memory depends on its prompt and the proposer's
first sample helps while its other samples hurt (``mixed`` mode).

0. Speed (``--part speed``, the default): at each ``--latencies`` value (the last one on a smaller run,
   ``--small-from``) the ``--strategies`` rows: the default strategy, ``first_accepted`` off beside it (all-at-once:
   the time/calls trade) and the sequential race (``acceptance: sequential``, every candidate in the race at once).
   Per run: LLM calls; sequential waits (seconds with at least one request in flight at the endpoint, over the
   latency); mean requests in flight while any is; wall time; the floor, the larger of calls x latency / width
   and the longest chain of dependent calls x latency, where the chain is counted from the data as a lower bound
   ((generations + 2) x the longest user's rounds and question waves, plus one proposal wait per generation;
   an agent's own memory writes are not counted); and wall / floor.
   ``--part startup``: ``memevo evolve`` as a child process (tracking on, a fresh run folder): seconds from its
   launch to its first request at the endpoint, then a ``--resume`` of the finished run: its wall time. With
   ``--baseline`` (another checkout's ``memevo``) each try launches both, one after the other, and the last line
   gives this one's median first request over the baseline's.
1. Pruning: the same evolution with the median pruner and without; agent calls (requests that reached
   the endpoint for the agent role) and the best validation score of each.
2. Concurrency: the same evolution (K candidates, tuned hyperparameters) with candidates evaluated one
   at a time and all at once; wall time of each.

Run: ``nice python benchmarks/evolve.py [--part speed|startup|pruning|concurrency] [--latencies 0.02 0.2 1]
[--strategies default all-at-once sequential] [--baseline ../main/.venv/bin/memevo]`` from the repository root.
Measured 2026-11-26 on the shared 2-core box (load ~10): pruning saved 24% of agent calls (612 -> 468)
at equal best validation score (1.000); concurrency x1.76 (candidates) and x2.32 (candidates + users).
Speed, 2026-11-27 (same box, niced, load 4.2-6.3, before = main at e50069d, run alternately with after): wall/floor
at 0.2 s 3.54 -> 2.66 (default) and 3.41 -> 2.54 (first_accepted off); at 1 s (smaller run) 3.65 -> 2.49 and
3.70 -> 2.47; sequential waits 201 -> 145 and 110 -> 75; calls unchanged (582, 690; 362, 434).
Start, 2026-11-27 (same box, niced, load 11-12, ``--part startup --repeats 4 --baseline`` = main at db5e0a4, run
alternately): first request of ``memevo evolve`` median 18.5 -> 4.7 s (x0.26; Optuna's study, MLflow's store, DSPy and
scipy.stats no longer before it); in-process (speed part) 0.5-1.1 -> 0.04-0.13 s. Speed after it (load 10-12): at 1 s
wall/floor 2.59 (default, all-at-once) and 2.61 (sequential), 77 sequential waits each: the wall is the strategy's
chain, four episode depths of ~19 waits (seed; candidate validation; its train check; test), where the floor counts
~10 per depth (no memory writes) and three depths.
"""

from __future__ import annotations

import argparse
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
from memevo.environments.data.io import load_items, save_items  # noqa: E402
from memevo.environments.runner import EpisodeConfig, period_plan  # noqa: E402
from memevo.evolve.config import parse_evolve_config  # noqa: E402
from memevo.evolve.loop import EvolutionResult, run_evolution  # noqa: E402
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
    floor: float
    first_request: float


def busy_seconds(spans: list[tuple[float, float]]) -> float:
    """Seconds with at least one request in flight (the union of the spans)."""
    busy, reach = 0.0, float("-inf")
    for start, end in sorted(spans):
        if end > reach:
            busy += end - max(start, reach)
            reach = end
    return busy


def chain_waits(data: Path, overrides: dict[str, Any]) -> int:
    """A lower bound of the run's longest chain of dependent calls, in waits (see the module docstring)."""
    episode = overrides.get("episode", {})
    config = EpisodeConfig(rounds_init=episode.get("rounds_init", 1), rounds_update=episode.get("rounds_update", 1))
    periods = episode.get("max_periods")
    longest = max(sum(period_plan(item, config).calls_per_period[:periods]) for item in load_items(data))
    generations = overrides.get("budget", {}).get("generations", 2)
    return (generations + 2) * longest + generations


def speed_run(data: Path, latency: float, workdir: Path, name: str, **overrides: Any) -> SpeedRow:
    backend = CategoryBackend(category_world(8, 3), proposer_mode="mixed")
    server = TimedServer(backend.http_reply, latency_s=latency)
    with server, LLMHub(cache_dir=workdir / f"cache-{name}", use_cache=False) as hub:
        started = time.perf_counter()
        run_evolution(config(data, server.url, **overrides), run_dir=workdir / name, hub=hub, resume=False)
        wall = time.perf_counter() - started
        calls = hub.accounting.report().total().calls
    busy = busy_seconds(server.spans)
    floor = max(calls * latency / WIDTH, chain_waits(data, overrides) * latency)
    return SpeedRow(label=name, latency=latency, calls=calls, waits=busy / latency,
                    in_flight=sum(end - start for start, end in server.spans) / busy, wall=wall, floor=floor,
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
    "all-at-once": {"first_accepted": False},
    "sequential": {"acceptance": "sequential", "first_accepted": False},
}
"""The speed table's rows per latency: ``strategy`` overrides (all-at-once: the time/calls trade of first_accepted;
sequential: the race, all candidates still in it at once)."""


def speed_table(data: Path, workdir: Path, latencies: list[float], small_from: float, strategies: list[str]) -> None:
    print(f"speed: {', '.join(strategies)}; width {WIDTH}; load "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at the start")
    print("| run | latency s | calls | sequential waits | mean in flight | wall s | floor s | wall/floor "
          "| first request s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for latency in latencies:
        base = SMALL_RUN if latency >= small_from else SPEED_RUN
        for strategy in strategies:
            overrides = {**base, "episode": {**base["episode"], "user_concurrency": None,
                                             "candidate_concurrency": None}}
            if STRATEGIES[strategy]:
                overrides["strategy"] = STRATEGIES[strategy]
            name = f"{strategy}-{latency:g}" + ("-small" if base is SMALL_RUN else "")
            row = speed_run(data, latency, workdir, name, **overrides)
            print(f"| {name} | {latency:g} | {row.calls} | {row.waits:.0f} | {row.in_flight:.1f} | {row.wall:.1f} | "
                  f"{row.floor:.1f} | {row.wall / row.floor:.2f} | {row.first_request:.2f} |", flush=True)
    print(f"load {os.getloadavg()[0]:.1f} at the end")


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
            speed_table(data, workdir, args.latencies, args.small_from, args.strategies)
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
