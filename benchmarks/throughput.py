"""Throughput of ``memevo eval`` against its floor: the endpoint.

memevo's work is LLM calls, so an evaluation cannot beat max(calls x latency / concurrency, the longest
chain of calls one user must make in order x latency). This runs the real ``memevo eval`` command as a
child process (start-up included) against the latency-server DOUBLE (tests/doubles/latency_server.py),
served from this process with a fixed latency per request and little time of its own (the fault server
this used before queued bursts of requests behind each other: 2-4 ms more per request at 8 users), on
synthetic data made by ``memevo env synth``:

- ``small``: 8 users x 5 update periods x 5 questions;
- ``amemgym``: AMemGym-sized, 16 users x 10 update periods x 10 questions, 3 changes per period and 150
  filler sentences per query;

for the native and the AWI agent (AMemGym's released agent configs in tests/fixtures/amemgym_agent).
Every (data, agent) is run at concurrency 1 and at the chosen concurrencies, plus once with users one at a
time and unlimited concurrency to measure each user's longest chain: the server counts a request's
depth as one more than the deepest request that finished before it arrived, restarting at each user
(users are told apart by the time their last period file was written).

Columns: wall seconds (start-up included), seconds from start to the first request, seconds from the last
reply to the end (scoring and writing the outputs), calls (requests the
server answered), peak requests in flight, floor seconds, wall / floor, its lowest and highest over the
``--repeats`` runs (the machine's speed drifts between runs), speed-up over concurrency 1, CPU
ms per call (the eval process's own user + system CPU, all its threads, read as it exits, minus the CPU of a
child that only starts up, / calls; the plot process's CPU is not in it: subtracting a separately measured plot
CPU, as this did before, swung the figure by +-0.5 ms per call), peak RSS of the child and its plot process, the
size of its output folder, the machine's 1-minute load average after the run (the figures are only comparable
on an otherwise idle machine), and a speed check: a fixed Python loop timed just before the run (the run shown, then
the lowest and highest over the repeats), since an idle machine's speed drifts too. The server double answers JSON
requests with valid JSON (``--echo-replies``: echo everything, as before).

With ``--amemgym``, AMemGym's own evaluator (``eval/overall.py`` of the checkout at ``$MEMEVO_AMEMGYM_SOURCE``,
default /tmp/amemgym, run as its README runs it, by ``--amemgym-python``, whose environment must hold AMemGym's
dependencies) evaluates the same data and agent against the same double, and ``memevo eval`` runs the same protocol
(LLM simulator, ``--amemgym-compat``) at the first chosen concurrency; a second table gives both wall times, their
calls and AMemGym's wall / memevo's. With ``--baseline-python``, every memevo run is repeated right after by that
interpreter (another checkout's installation, such as main's), so two versions are compared under the same load.

    python benchmarks/throughput.py [--data small amemgym] [--agents native awi] [--concurrency 16 64] [--repeats 3]
        [--amemgym] [--baseline-python ../main/.venv/bin/python]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.doubles when run as a script

from tests.doubles.fault_server import echo_reply  # noqa: E402
from tests.doubles.latency_server import MODEL, LatencyServer  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
AGENTS = {name: ROOT / "tests" / "fixtures" / "amemgym_agent" / f"{name}.json" for name in ("native", "awi")}
DATA = {
    "small": ["--users", "8", "--periods", "5", "--questions", "5"],
    "amemgym": ["--users", "16", "--periods", "10", "--questions", "10", "--changes-per-period", "3",
                "--filler-sentences", "150"],
}
AMEMGYM_CHECKOUT = Path(os.environ.get("MEMEVO_AMEMGYM_SOURCE", "/tmp/amemgym"))
AMEMGYM_ENV_CONFIG = "configs/env/v1.base.json"
AMEMGYM_PROTOCOL = ("--simulator", "llm", "--amemgym-compat")
"""What ``memevo eval`` runs beside AMemGym: its LLM user simulator and its handling of replies."""
CHAIN_CONCURRENCY = 4096  # "unlimited": nothing waits on the limiter, so depth is the protocol's alone
NOTE_LABELS = 20
STARTUP_SAMPLES = 5
SPEED_CHECK_LOOPS = 200_000
ROUND_TRIP_SAMPLES = 40


def valid_reply(body: dict[str, Any]) -> str:
    """What an endpoint with constrained decoding sends: JSON when JSON was asked for (the first choice of an
    answer schema; else one note whose label is one of NOTE_LABELS, so an AWI memory grows to a realistic
    size), otherwise the last message echoed. An echo to a JSON request made every answer and memory write
    a format error, doubled those calls with retries, and spent the client's CPU repairing long non-JSON."""
    form = body.get("response_format")
    if form is None:
        return echo_reply(body)
    schema = form.get("schema") or (form.get("json_schema") or {}).get("schema") or {}
    answer = (schema.get("properties") or {}).get("answer")
    if answer is not None:
        return json.dumps({"answer": answer["enum"][0]})
    last = body["messages"][-1]["content"]
    return json.dumps({f"note {zlib.crc32(last.encode()) % NOTE_LABELS}": last[-80:]})


def completion(reply: Callable[[dict[str, Any]], str]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A chat completion of ``reply``'s text, prompt tokens estimated from characters: counting the words of a
    native agent's history (up to ~800 KB per request) cost the server ~10 ms of CPU per call, more than the
    client it measures."""

    def complete(body: dict[str, Any]) -> dict[str, Any]:
        text = reply(body)
        prompt_tokens = sum(len(message["content"]) for message in body["messages"]) // 4
        return {"model": body["model"], "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                                     "finish_reason": "stop"}],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(text) // 4}}

    return complete


@dataclass
class Run:
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    calls: int
    peak_in_flight: int
    output_mb: float
    user_ends: list[float]
    first_request_s: float
    after_last_reply_s: float
    speed_check_ms: float


OWN_CPU_AT_EXIT = (
    "import atexit, os, resource, sys\n"
    "def own_cpu():\n"
    "    usage = resource.getrusage(resource.RUSAGE_SELF)\n"
    "    with open(os.environ['THROUGHPUT_CPU_FILE'], 'w') as file:\n"
    "        file.write(repr(usage.ru_utime + usage.ru_stime))\n"
    "atexit.register(own_cpu)\n"
    "from memevo.evolve.cli.main import main\n"
    "sys.argv[0] = 'memevo'\n"
    "main()\n"
)
"""``memevo`` as its console script runs it, writing the process's own CPU time (not its children's) to
``$THROUGHPUT_CPU_FILE`` when it exits: ``memevo eval`` runs exit callbacks even when it skips the teardown."""


def child_env(**extra: str) -> dict[str, str]:
    """The environment of every child: as installed, memevo runs from compiled bytecode, so a shell's
    PYTHONDONTWRITEBYTECODE (which would make each child compile memevo's sources again, ~0.1-0.2 s of CPU)
    is left out; the first child writes the bytecode the others read."""
    env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    return {**env, **extra}


def synthesize(folder: Path, name: str) -> Path:
    path = folder / f"{name}.json"
    if not path.exists():
        subprocess.run([sys.executable, "-m", "memevo.evolve.cli", "env", "synth", *DATA[name], "--out", str(path)],
                       check=True, stdout=subprocess.DEVNULL, env=child_env())
    return path


def speed_check_ms() -> float:
    """Time of a fixed pure-Python loop, taken just before each run: this VM's speed changed by up to 2x within
    minutes (the same native run spent 0.9 or 1.8 ms of CPU per call, its start-up 0.29 or 0.37 s), and every
    figure here moves with it; this says which speed a run had."""
    started = time.perf_counter()
    total = 0
    for number in range(SPEED_CHECK_LOOPS):
        total += number % 7
    return 1000 * (time.perf_counter() - started)


def low_high(values: list[float], decimals: int) -> str:
    """The lowest and highest of ``values``, as the tables show a range over repeated runs."""
    return f"{min(values):.{decimals}f}-{max(values):.{decimals}f}"


def folder_mb(path: Path) -> float:
    return sum(file.stat().st_size for file in path.rglob("*") if file.is_file()) / 1e6


def last_period_times(run_dir: Path) -> list[float]:
    """When each user's last period file was written (monotonic clock), in order."""
    offset = time.monotonic() - time.time()
    ends = [max(p.stat().st_mtime for p in user.glob("period_*[0-9].json.gz")) for user in (run_dir / "users").iterdir()]
    return sorted(end + offset for end in ends)


def evaluate(server: LatencyServer, data: Path, agent: str, concurrency: int, users_at_once: int | None,
             work: Path, *, python: str = sys.executable, protocol: tuple[str, ...] = ("--simulator", "template")
             ) -> Run:
    """One ``memevo eval`` by ``python`` in a child process with a fresh cache; its own CPU as it exits, peak RSS
    from ``wait4``."""
    out = Path(tempfile.mkdtemp(dir=work, prefix=f"{agent}-c{concurrency}-"))
    cpu_file = out / "cpu_s"
    env = child_env(OPENAI_BASE_URL=server.url, MEMEVO_CACHE_DIR=str(out / "cache"), MEMEVO_MODEL="",
                    MLFLOW_DISABLE_TELEMETRY="true", DO_NOT_TRACK="1", THROUGHPUT_CPU_FILE=str(cpu_file))
    command = [python, "-c", OWN_CPU_AT_EXIT, "eval", "--agent", str(AGENTS[agent]), "--env", str(data),
               "--out", str(out / "eval"), *protocol, "--concurrency", str(concurrency)]
    if users_at_once is not None:
        command += ["--max-concurrent-users", str(users_at_once)]
    server.reset()
    speed = speed_check_ms()
    started = time.monotonic()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.monotonic() - started
    if os.waitstatus_to_exitcode(status) != 0:
        failure = process.stderr.read().decode()[-2000:] if process.stderr else ""
        raise SystemExit(f"memevo eval failed: {' '.join(command)}\n{failure}")
    return Run(wall_s=wall, cpu_s=float(cpu_file.read_text()), peak_rss_mb=usage.ru_maxrss / 1024,
               calls=len(server.spans), peak_in_flight=server.peak_in_flight,
               output_mb=folder_mb(out / "eval"), user_ends=last_period_times(out / "eval" / "run"),
               first_request_s=min(start for start, _ in server.spans) - started,
               after_last_reply_s=started + wall - max(end for _, end in server.spans), speed_check_ms=speed)


def amemgym_run(server: LatencyServer, data: Path, agent: str, work: Path, python: str) -> tuple[float, int]:
    """Wall seconds and calls of AMemGym's own evaluator on ``data`` with ``agent``'s config, in a child process
    against the double (one user, one call at a time, as AMemGym runs)."""
    out = Path(tempfile.mkdtemp(dir=work, prefix=f"amemgym-{agent}-"))
    env = child_env(PYTHONPATH=str(AMEMGYM_CHECKOUT / "src"), OPENAI_BASE_URL=server.url, OPENAI_API_KEY="sk-bench")
    command = [python, "-m", "amemgym.eval.overall", "--env_data", str(data), "--env_config",
               str(AMEMGYM_CHECKOUT / AMEMGYM_ENV_CONFIG), "--agent_config", str(AGENTS[agent]), "--output_dir",
               str(out)]
    server.reset()
    started = time.monotonic()
    finished = subprocess.run(command, env=env, cwd=out, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.monotonic() - started
    if finished.returncode != 0:
        raise SystemExit(f"AMemGym's evaluator failed: {' '.join(command)}\n{finished.stderr.decode()[-2000:]}")
    return wall, len(server.spans)


def compare_with_amemgym(server: LatencyServer, data_names: list[str], agents: list[str], concurrency: int,
                         work: Path, amemgym_python: str, baseline_python: str | None) -> None:
    """The second table: AMemGym's evaluator and ``memevo eval`` (and the baseline's) on the same data, calls and
    protocol, run one after the other so they share the machine's load."""
    baseline = "" if baseline_python is None else " | baseline memevo wall s | AMemGym / baseline"
    print(f"\n| data | agent | AMemGym wall s | AMemGym calls | memevo wall s (c={concurrency}) | memevo calls "
          f"| AMemGym / memevo{baseline} |")
    print("|---|---|---|---|---|---|---|" + ("---|---|" if baseline_python else ""))
    for data_name in data_names:
        data = synthesize(work, data_name)
        for agent in agents:
            reference_s, reference_calls = amemgym_run(server, data, agent, work, amemgym_python)
            ours = evaluate(server, data, agent, concurrency, None, work, protocol=AMEMGYM_PROTOCOL)
            row = (f"| {data_name} | {agent} | {reference_s:.1f} | {reference_calls} | {ours.wall_s:.2f} | "
                   f"{ours.calls} | {reference_s / ours.wall_s:.1f}x |")
            if baseline_python is not None:
                theirs = evaluate(server, data, agent, concurrency, None, work, python=baseline_python,
                                  protocol=AMEMGYM_PROTOCOL)
                row += f" {theirs.wall_s:.2f} | {reference_s / theirs.wall_s:.1f}x |"
            print(row, flush=True)


def startup_cpu_s(agent: str, python: str = sys.executable) -> float:
    """CPU time of a child that only starts up as a ``memevo eval`` run of ``agent`` does: the eval command's
    modules, then the gateway, the template simulator and the agent's kind. Models build their validators on
    first use (agents/core/lazy_model.py), so the builds a run needs are in its CPU per call, not here."""
    code = ("from memevo.evolve.cli import main as cli\ncli.load_command('eval')\n"
            "import memevo.agents.llm.hub, memevo.environments.amemgym.simulators.template\n"
            f"from memevo.agents.registry import agent_class\nagent_class({agent!r})")
    process = subprocess.Popen([python, "-c", code], env=child_env())
    _, _, usage = os.wait4(process.pid, 0)
    return usage.ru_utime + usage.ru_stime


def minimal_round_trip_s(server: LatencyServer, requests: int = ROUND_TRIP_SAMPLES) -> float:
    """Median round trip of the double for the simplest client there is (``http.client``, one kept-alive connection,
    one small request at a time): what a chain step costs here before any client work. On a 2-core VM it came to
    1.1-1.5 ms above the latency (0.27 ms at zero latency: most of it is likely the wake-ups of idle cores), which no
    client can avoid."""
    address = urlsplit(server.url)
    body = json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "ping"}]}).encode()
    connection = http.client.HTTPConnection(address.hostname or "", address.port)
    times = []
    try:
        for _ in range(requests):
            started = time.monotonic()
            connection.request("POST", f"{address.path}/chat/completions", body, {"Content-Type": "application/json"})
            connection.getresponse().read()
            times.append(time.monotonic() - started)
    finally:
        connection.close()
    server.reset()
    return statistics.median(times)


def longest_chain(spans: list[tuple[float, float]], user_ends: list[float]) -> int:
    """Depth of the deepest request, users run one at a time: 1 + the depth of the deepest request that finished
    before it arrived, counted afresh for each user (a user ends when its last period file is written)."""
    longest = 0
    spans = sorted(spans)
    for user_start, user_end in zip([0.0, *user_ends], user_ends, strict=False):
        mine = [(start, end) for start, end in spans if user_start <= start <= user_end]
        finished: list[tuple[float, int]] = []  # (finish time, depth)
        for start, end in mine:
            depth = 1 + max((d for done, d in finished if done <= start), default=0)
            finished.append((end, depth))
            longest = max(longest, depth)
    return longest


def table_row(data_name: str, label: str, concurrency: int, runs: list[Run], chain: int, latency: float,
              sequential: Run | None, startup_s: float) -> str:
    """One row of the first table: the run of median wall time of ``runs``, the median CPU, the ranges."""
    run = sorted(runs, key=lambda each: each.wall_s)[len(runs) // 2]
    cpu_s = statistics.median(each.cpu_s for each in runs)
    floor = max(run.calls * latency / concurrency, chain * latency)
    speedup = f"{sequential.wall_s / run.wall_s:.1f}x" if sequential is not None else "n/a"
    spread = (low_high([r.wall_s / floor for r in runs], 2)
              if floor and len(runs) > 1 else "n/a")  # the machine's speed drifts between runs
    return (f"| {data_name} | {label} | {concurrency} | {run.wall_s:.2f} | {run.first_request_s:.2f} | "
            f"{run.after_last_reply_s:.2f} | "
            f"{run.calls} | {run.peak_in_flight} | {floor:.2f} (chain {chain}) | "
            f"{f'{run.wall_s / floor:.2f}' if floor else 'n/a'} | {spread} | {speedup} | "
            f"{1000 * (cpu_s - startup_s) / run.calls:.2f} | "
            f"{run.peak_rss_mb:.0f} | {run.output_mb:.1f} | {os.getloadavg()[0]:.1f} | "
            f"{run.speed_check_ms:.1f} ({low_high([r.speed_check_ms for r in runs], 1)}) |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="+", choices=sorted(DATA), default=["small", "amemgym"])
    parser.add_argument("--agents", nargs="+", choices=sorted(AGENTS), default=["native", "awi"])
    parser.add_argument("--concurrency", nargs="+", type=int, default=[16])
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--echo-replies", action="store_true",
                        help="Echo the last message even to JSON requests (the double's behaviour before).")
    parser.add_argument("--skip-sequential", action="store_true", help="No concurrency-1 run (no speed-up column).")
    parser.add_argument("--repeats", type=int, default=1,
                        help="Runs per concurrency above 1; the run of median wall time is shown, with the range of "
                             "wall/floor over the runs and the median CPU (an idle 2-core machine's start-up alone "
                             "varied by 0.15 s between runs).")
    parser.add_argument("--amemgym", action="store_true",
                        help="Also run AMemGym's own evaluator on the same data and compare (the second table).")
    parser.add_argument("--amemgym-python", default=sys.executable,
                        help="The interpreter that runs AMemGym's evaluator (its dependencies installed).")
    parser.add_argument("--baseline-python",
                        help="Another installation's interpreter: each memevo run is repeated by it, in its own rows.")
    args = parser.parse_args()
    latency = args.latency_ms / 1000
    pythons = {"": sys.executable} | ({" (baseline)": args.baseline_python} if args.baseline_python else {})
    print(f"load average before: {os.getloadavg()}", flush=True)
    startup = {(tag, agent): min(startup_cpu_s(agent, python) for _ in range(STARTUP_SAMPLES))
               for tag, python in pythons.items() for agent in args.agents}
    print(f"start-up CPU (imports only, best of {STARTUP_SAMPLES}): "
          + ", ".join(f"{a}{tag} {s:.2f} s" for (tag, a), s in startup.items()))
    reply = echo_reply if args.echo_replies else valid_reply
    with tempfile.TemporaryDirectory(prefix="memevo-throughput-") as folder, \
            LatencyServer(completion(reply), latency_s=latency) as server:
        work = Path(folder)
        round_trip = minimal_round_trip_s(server)
        print(f"round trip of the double for a minimal client (median of {ROUND_TRIP_SAMPLES} sequential requests): "
              f"{1000 * round_trip:.2f} ms at a latency of {args.latency_ms:g} ms", flush=True)
        print("| data | agent | concurrency | wall s | first request s | after last reply s | calls | peak in flight "
              "| floor s | wall/floor | wall/floor range "
              "| speed-up vs c=1 | CPU ms/call | peak RSS MB | output MB | load (1 min) | speed check ms |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for data_name in args.data:
            data = synthesize(work, data_name)
            for agent in args.agents:
                chain_run = evaluate(server, data, agent, CHAIN_CONCURRENCY, 1, work)
                chain = longest_chain(server.spans, chain_run.user_ends)
                levels = ([] if args.skip_sequential else [1]) + args.concurrency
                sequential: dict[str, Run] = {}
                for concurrency in levels:
                    runs: dict[str, list[Run]] = {tag: [] for tag in pythons}
                    for _ in range(1 if concurrency == 1 else args.repeats):
                        for tag, python in pythons.items():  # interleaved: both versions see the same drift
                            runs[tag].append(evaluate(server, data, agent, concurrency, None, work, python=python))
                    for tag, measured in runs.items():
                        if concurrency == 1:
                            sequential[tag] = measured[0]
                        print(table_row(data_name, agent + tag, concurrency, measured, chain, latency,
                                        sequential.get(tag), startup[tag, agent]), flush=True)
        if args.amemgym:
            compare_with_amemgym(server, args.data, args.agents, args.concurrency[0], work, args.amemgym_python,
                                 args.baseline_python)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
