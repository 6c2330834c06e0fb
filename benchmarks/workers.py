"""Workers benchmark: one ablation run by 1, 2 and 4 worker processes on one PostgreSQL store, under one rate limit.

Everything is real except the model: PostgreSQL (a throwaway cluster) holds the work claims and the shared rate
bucket, an MLflow server on it takes every run, and the workers talk over loopback HTTP to the category test
double (tests/doubles/category_backend.py served by tests/doubles/fault_server.py with injected latency). Every
worker's gateway takes from one bucket of ``--rpm`` requests per minute, so more workers may not mean more
requests per minute than the key allows. For each worker count: wall time, (arm, seed) units per minute,
requests per second, the peak requests per minute the endpoint saw, and whether the scores equal the 1-worker
run. The response cache is off, so every run sends the same requests (with it, one worker would reuse the replies
of identical seeds that concurrent workers both ask for). Then a worker is killed (SIGKILL) mid-unit: how many times each unit was claimed and whether the result
still equals the 1-worker run, with each evolution logged to MLflow once.

Run: ``python benchmarks/workers.py [--rpm 600] [--latency 0.02] [--seeds 4]`` from the repository root (needs
PostgreSQL's server binaries, ``bash .ci/services.sh``, and psycopg, ``pip install 'psycopg[binary]'``).
Measured 2026-11-27 on the shared 2-core box (load 3-6), 8 units, 1972 requests per run: under 600 requests/min
1, 2 and 4 workers all ran at the limit (8.4-9.6 req/s, peak 602-611 requests in any 60 s: the limit plus the
one-second burst), same scores and 8 distinct MLflow runs each time. Under 240/min (with the response cache,
which lets one worker reuse identical seeds' replies) the peak over 60 s was 194, 221 and 239. A worker killed
mid-unit: that one unit claimed twice, every unit done, 8 distinct evolution runs, parent FINISHED, same scores.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memevo.evolve.workers.services import MlflowServer, PostgresCluster, postgres_bin  # noqa: E402
from tests.doubles.category_backend import CategoryBackend  # noqa: E402
from tests.doubles.fault_server import FaultServer  # noqa: E402
from tests.doubles.worker_ablation import evolution_runs, scores, world, write_ablation  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


class TimedEndpoint:
    """The category double behind HTTP, noting when each chat request arrived."""

    def __init__(self) -> None:
        self.backend = CategoryBackend(world())
        self.arrivals: list[float] = []
        self._lock = threading.Lock()

    def reply(self, body: dict[str, Any]) -> str:
        with self._lock:
            self.arrivals.append(time.monotonic())
        return self.backend.http_reply(body)


def peak_per_minute(arrivals: list[float], window_s: float) -> float:
    """The most requests in any window of ``window_s`` seconds, scaled to a minute."""
    ordered, start, best = sorted(arrivals), 0, 0
    for end, moment in enumerate(ordered):
        while moment - ordered[start] > window_s:
            start += 1
        best = max(best, end - start + 1)
    return best * 60 / window_s


def environment(folder: Path, store: str, rpm: float) -> dict[str, str]:
    return {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "1", "OPENAI_API_KEY": "test",
            "MEMEVO_CACHE_DIR": str(folder / "cache"), "MEMEVO_REQUESTS_PER_MINUTE": str(rpm),
            "MEMEVO_RATE_STORE": store, "MEMEVO_RATE_KEY": f"bench-{folder.name}", "PYTHONPATH": str(ROOT)}


def with_seeds(path: Path, seeds: int) -> None:
    import yaml

    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["seeds"] = list(range(seeds))
    path.write_text(yaml.safe_dump(data), encoding="utf-8")


def run_workers(work: Path, count: int, args: argparse.Namespace, cluster: PostgresCluster,
                server: MlflowServer) -> dict[str, Any]:
    folder = work / f"workers-{count}"
    endpoint = TimedEndpoint()
    with FaultServer(endpoint.reply, latency_s=args.latency) as fake:
        with_seeds(write_ablation(folder, fake.url, server.url, f"bench-{count}"), args.seeds)
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "memevo.evolve.cli", "ablate", "ablation.yaml", "--run-dir",
                               "run", "--workers", str(count), "--store", cluster.url(), "--no-cache"], cwd=folder,
                              env=environment(folder, cluster.url(), args.rpm), capture_output=True, text=True)
        wall = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"{count} worker(s) failed:\n{done.stderr[-3000:]}")
    span = max(endpoint.arrivals) - min(endpoint.arrivals)
    return {"wall": wall, "requests": len(endpoint.arrivals), "span": span, "scores": scores(folder / "run"),
            "peak10": peak_per_minute(endpoint.arrivals, 10.0),
            "peak60": peak_per_minute(endpoint.arrivals, 60.0) if span >= 60 else None,
            "runs": evolution_runs(server.url, f"bench-{count}")}


def kill_one(work: Path, args: argparse.Namespace, cluster: PostgresCluster, server: MlflowServer) -> dict[str, Any]:
    """Two workers; one is killed after a few requests of its first unit; the survivor finishes everything."""
    import psycopg

    folder = work / "killed"
    endpoint = TimedEndpoint()
    env = environment(folder, cluster.url(), args.rpm)
    with FaultServer(endpoint.reply, latency_s=args.latency) as fake:
        with_seeds(write_ablation(folder, fake.url, server.url, "bench-killed"), args.seeds)
        command = [sys.executable, "-m", "tests.doubles.ablation_worker_process", "ablation.yaml", "run",
                   cluster.url(), "{name}", str(args.grace)]
        workers = {name: subprocess.Popen([part.format(name=name) for part in command], cwd=folder, env=env,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                   for name in ("survivor", "doomed")}
        while len(endpoint.arrivals) < 40:
            time.sleep(0.05)
        workers["doomed"].send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        workers["doomed"].wait()
        _, errors = workers["survivor"].communicate()
        finished = time.monotonic() - killed_at
    if workers["survivor"].returncode != 0:
        sys.exit(f"the surviving worker failed:\n{errors[-3000:]}")
    with psycopg.connect(cluster.url().replace("postgresql+psycopg", "postgresql")) as db:
        claims: dict[str, int] = dict(db.execute("SELECT unit, claims FROM memevo_work_units WHERE job LIKE 'ablation/bench-killed/%' "
                                 "AND unit LIKE '%seed-%'").fetchall())
    return {"claims": claims, "scores": scores(folder / "run"), "runs": evolution_runs(server.url, "bench-killed"),
            "after_kill": finished}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rpm", type=float, default=600.0, help="the shared requests-per-minute limit")
    parser.add_argument("--latency", type=float, default=0.02, help="the fake endpoint's seconds per request")
    parser.add_argument("--seeds", type=int, default=4, help="seeds per arm (2 arms)")
    parser.add_argument("--grace", type=float, default=5.0, help="heartbeat grace of the kill scenario, seconds")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    args = parser.parse_args()
    if postgres_bin() is None:
        sys.exit("n/a (PostgreSQL server binaries are not installed: bash .ci/services.sh)")
    units = 2 * args.seeds
    print(f"ablation: 2 arms x {args.seeds} seeds = {units} units; endpoint latency {args.latency:.3f} s; "
          f"shared limit {args.rpm:.0f} requests/min")
    with tempfile.TemporaryDirectory(prefix="memevo-workers-bench-") as temporary, PostgresCluster() as cluster, \
            MlflowServer(cluster.url("mlflow"), Path(temporary) / "artifacts") as server:
        work = Path(temporary)
        results = {count: run_workers(work, count, args, cluster, server) for count in args.workers}
        reference = results[args.workers[0]]["scores"]
        print(f"{'workers':>7} {'wall s':>7} {'units/min':>9} {'requests':>8} {'req/s':>6} {'peak/min (10 s)':>15} "
              f"{'peak/min (60 s)':>15} {'MLflow runs':>11} {'= 1 worker':>10}")
        for count, result in results.items():
            peak60 = (f"{result['peak60']:.0f}" if result["peak60"] is not None
                      else f"n/a (ran {result['span']:.0f} s)")
            status, names = result["runs"]
            print(f"{count:>7} {result['wall']:>7.1f} {units / result['wall'] * 60:>9.2f} {result['requests']:>8} "
                  f"{result['requests'] / result['wall']:>6.1f} {result['peak10']:>15.0f} {peak60:>15} "
                  f"{len(names):>4} ({len(set(names))} distinct) {str(result['scores'] == reference):>5}")
        killed = kill_one(work, args, cluster, server)
        status, names = killed["runs"]
        twice = sorted(unit for unit, count in killed["claims"].items() if count > 1)
        print(f"killed worker: units claimed twice {twice or 'none'}; every unit done: "
              f"{len(killed['claims']) == units}; evolution runs {len(names)} ({len(set(names))} distinct), parent "
              f"{status}; result = 1 worker: {killed['scores'] == reference}; survivor finished "
              f"{killed['after_kill']:.1f} s after the kill (grace {args.grace:.0f} s)")


if __name__ == "__main__":
    main()
