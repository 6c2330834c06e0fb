"""Resident memory of the embedded model's server over a run: its peak and its slope.

Two ways to load it. By default the benchmark starts the server itself and sends ``--requests`` chats the way
memevo does: a few long prompt heads (a note write, a reply, a proposal) each followed by text that changes at every
request, so the prompt cache keeps saving new states, with option scoring (the likelihood route) in between. With
``--command`` it runs that command instead (for example ``memevo evolve e.yaml``) and samples the embedded servers
the command starts (its descendants only, not other programs' servers). Memory is the sum of the servers' resident set (VmRSS), sampled every ``--interval`` seconds.

The slope is a least-squares fit over the second half of the samples, in MB per minute: a bounded server levels
off, so its slope falls towards 0 while a leaking one keeps climbing.

    python benchmarks/llama_memory.py [--requests 120] [--interval 1]
    python benchmarks/llama_memory.py --max-minutes 30 --command memevo evolve e.yaml
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memevo.agents.llm.config import LOCAL_MODEL_NAME  # noqa: E402
from memevo.agents.llm.llama_server import OPTION_LOGPROBS_PATH  # noqa: E402
from memevo.agents.llm.local_server import LocalModelServer  # noqa: E402

SERVER_MODULE = "memevo.agents.llm.llama_server"
WORDS = ("garden painting travel coffee morning river music budget sister running book movie city winter "
         "market kitchen office bicycle dinner weekend phone letter summer project").split()
HEADS = {
    "write": "Update your notes about the user from the conversation below. Reply with one JSON object. ",
    "reply": "You are a helpful assistant. What you know about the user: ",
    "propose": "You improve the prompt of a memory agent. Read the feedback and write a better prompt. ",
}


def rss_bytes(pid: int) -> int:
    """VmRSS of ``pid`` in bytes; 0 once the process is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def parent_of(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def server_pids(root: int) -> list[int]:
    """The embedded model servers among the descendants of ``root`` (other users' and sessions' are left out)."""
    parents = {int(entry.name): parent_of(int(entry.name)) for entry in Path("/proc").iterdir() if entry.name.isdigit()}
    family, grown = {root}, True
    while grown:
        children = {pid for pid, parent in parents.items() if parent in family} - family
        family |= children
        grown = bool(children)
    found = []
    for pid in family - {root}:
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if SERVER_MODULE.encode() in command:
            found.append(pid)
    return found


class Sampler(threading.Thread):
    """Samples the summed RSS of the servers ``pids()`` names until stopped: (seconds since start, bytes)."""

    def __init__(self, pids: Callable[[], list[int]], interval_s: float) -> None:
        super().__init__(daemon=True)
        self.pids = pids
        self.interval_s = interval_s
        self.samples: list[tuple[float, int]] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        started = time.monotonic()
        while not self.stopped.is_set():
            total = sum(rss_bytes(pid) for pid in self.pids())
            self.samples.append((time.monotonic() - started, total))
            self.stopped.wait(self.interval_s)


def slope_mb_per_min(samples: list[tuple[float, int]]) -> float | None:
    """Least-squares slope of the second half of the samples, MB/min; None with fewer than 4 samples there."""
    tail = [(t, b) for t, b in samples[len(samples) // 2 :] if b > 0]
    if len(tail) < 4:
        return None
    return float(statistics.linear_regression([t for t, _ in tail], [b / 1e6 for _, b in tail]).slope) * 60


def varied_text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def drive(server: LocalModelServer, requests: int, prompt_words: int) -> None:
    """memevo's pattern: long shared heads, a changing tail, short replies, option scoring every third request."""
    rng = random.Random(0)
    root = server.url.removesuffix("/v1")
    with httpx.Client(timeout=600.0) as client:
        for index in range(requests):
            head = list(HEADS.values())[index % len(HEADS)] + varied_text(random.Random(index % 3), prompt_words)
            messages = [{"role": "system", "content": head},
                        {"role": "user", "content": varied_text(rng, prompt_words // 4)}]
            if index % 3 == 2:
                body = {"model": LOCAL_MODEL_NAME, "messages": messages, "options": [rng.choice(WORDS) for _ in range(4)]}
                client.post(root + OPTION_LOGPROBS_PATH, json=body).raise_for_status()
            else:
                body = {"model": LOCAL_MODEL_NAME, "messages": messages, "max_tokens": 16, "temperature": 0.8}
                client.post(server.url + "/chat/completions", json=body).raise_for_status()


def wait_bounded(process: subprocess.Popen[bytes], max_minutes: float | None) -> int:
    """Wait for ``process``; past ``max_minutes`` interrupt it as Ctrl-C would (a memevo run keeps its work)."""
    try:
        return process.wait(timeout=max_minutes * 60 if max_minutes else None)
    except subprocess.TimeoutExpired:
        print(f"stopping the command after {max_minutes:g} minutes", file=sys.stderr)
        process.send_signal(signal.SIGINT)
        return process.wait()


def report(samples: list[tuple[float, int]], wall_s: float) -> None:
    peak = max((b for _, b in samples), default=0)
    slope = slope_mb_per_min(samples)
    load = os.getloadavg()
    print(f"wall {wall_s:.0f} s, {len(samples)} samples, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print(f"server RSS peak: {peak / 1e9:.2f} GB")
    print("server RSS slope (second half): " + (f"{slope:+.1f} MB/min" if slope is not None else "n/a (too few samples)"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=120, help="requests to send (without --command)")
    parser.add_argument("--prompt-words", type=int, default=700, help="words in each prompt head")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between samples")
    parser.add_argument("--max-minutes", type=float, help="with --command: stop it (SIGINT) after this long")
    parser.add_argument("--command", nargs=argparse.REMAINDER, help="run this instead and sample its servers")
    args = parser.parse_args()
    started = time.monotonic()
    if args.command:
        process = subprocess.Popen(args.command)
        sampler = Sampler(lambda: server_pids(process.pid), args.interval)
        sampler.start()
        returncode = wait_bounded(process, args.max_minutes)
        sampler.stopped.set()
        report(sampler.samples, time.monotonic() - started)
        return returncode
    with LocalModelServer() as server:
        sampler = Sampler(lambda: [server.pid], args.interval)
        sampler.start()
        drive(server, args.requests, args.prompt_words)
        sampler.stopped.set()
    report(sampler.samples, time.monotonic() - started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
