"""Time from launching ``memevo`` to its first output, and to its exit, for commands that make no LLM call.

Each command runs ``--repeats`` times as a child process (bytecode already compiled by a first, unmeasured run);
the table shows the median and the lowest of the time until the first byte on stdout and until exit. With
``--baseline`` another memevo executable (another checkout's venv) runs the same commands, interleaved with this
one so that both see the same machine load, and the last column is this one's median over the baseline's.

    python benchmarks/startup.py [--memevo .venv/bin/memevo] [--baseline ../main/.venv/bin/memevo] [--repeats 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

COMMANDS = {
    "memevo --help": ["--help"],
    "memevo eval --help": ["eval", "--help"],
    "memevo env stats DATA": ["env", "stats", "{data}"],
}


@dataclass
class Timing:
    first_output_s: float
    exit_s: float


def run_once(memevo: str, args: list[str]) -> Timing:
    """One run with stdout piped: the time its first byte arrives and the time it exits."""
    started = time.perf_counter()
    process = subprocess.Popen([memevo, *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               env={**os.environ, "COLUMNS": "80"})
    assert process.stdout is not None
    process.stdout.read(1)
    first = time.perf_counter() - started
    process.stdout.read()
    if process.wait() != 0:
        raise SystemExit(f"{memevo} {' '.join(args)} exited {process.returncode}")
    return Timing(first, time.perf_counter() - started)


def describe(times: list[float]) -> str:
    return f"{1000 * statistics.median(times):.0f} (min {1000 * min(times):.0f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memevo", default=str(Path(sys.executable).with_name("memevo")))
    parser.add_argument("--baseline", help="Another memevo executable to compare with.")
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    executables = {"this": args.memevo} | ({"baseline": args.baseline} if args.baseline else {})
    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory(prefix="memevo-startup-") as folder:
        data = str(Path(folder) / "data.json")
        subprocess.run([args.memevo, "env", "synth", "--users", "4", "--periods", "3", "--out", data], check=True,
                       stdout=subprocess.DEVNULL)
        print("| command | executable | first output ms, median (min) | exit ms, median (min) | median first output, "
              "this / baseline |")
        print("|---|---|---|---|---|")
        for label, template in COMMANDS.items():
            command = [data if part == "{data}" else part for part in template]
            timings: dict[str, list[Timing]] = {name: [] for name in executables}
            for name, memevo in executables.items():
                run_once(memevo, command)  # unmeasured: compiles bytecode, warms the file cache
            for _ in range(args.repeats):
                for name, memevo in executables.items():
                    timings[name].append(run_once(memevo, command))
            medians = {name: statistics.median(t.first_output_s for t in runs) for name, runs in timings.items()}
            for name, runs in timings.items():
                ratio = (f"{medians['this'] / medians['baseline']:.2f}" if "baseline" in medians and name == "this"
                         else "")
                print(f"| {label} | {name} | {describe([t.first_output_s for t in runs])} | "
                      f"{describe([t.exit_s for t in runs])} | {ratio} |", flush=True)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
