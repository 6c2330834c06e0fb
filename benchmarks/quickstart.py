"""How long the quickstart's evolution takes on the embedded model, and where the time goes.

Runs experiments/quickstart.yaml as ``make quickstart`` does (a fresh run folder and, unless ``--warm-cache``, an
empty response cache, so every call reaches the model), then prints: wall time from the start to the model being
ready and from then to the end (the evolution), LLM calls and prompt/completion tokens per role, the server's
busy share (the time a request was on the wire to it, over the evolution's wall: with one request at a time
this is the share of the run the model was working) and its CPU seconds, the requests by kind (option scoring,
note writes, replies, proposals) with their tokens and how many stopped at their token cap, the machine's load
average, since wall times from a shared machine mean little without it (server CPU seconds and tokens travel
better), and the held-out lines ``memevo evolve`` ends with (seed vs best on the test users, with intervals).

Run: ``python benchmarks/quickstart.py [--threads N]`` from the repository root. Figures quoted in the README.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.wire_counts import WireClock  # noqa: E402
from memevo.agents.llm.hub import LLMHub  # noqa: E402
from memevo.environments.progress import configure_terminal  # noqa: E402
from memevo.evolve.config import load_evolve_config  # noqa: E402
from memevo.evolve.loop import run_evolution  # noqa: E402
from memevo.evolve.presentation.headline import held_out_lines  # noqa: E402

QUICKSTART = Path(__file__).resolve().parents[1] / "experiments" / "quickstart.yaml"


PHASE_STARTS = ("asking the bare model", "scoring ", "gen 1: the proposer", "stopped")
"""The lines memevo prints where a phase of the run starts (the proposer's, each evaluation's, the end)."""
IDLE_S_PER_PROMPT_TOKEN, IDLE_S_PER_COMPLETION_TOKEN = 6.24e-3, 37.5e-3
"""Idle seconds per token, fitted to two idle runs of the quickstart on a 2-core machine (24.2K prompt + 2.4K
completion tokens in 241 s; 30.5K + 2.1K in 269 s): what estimates an idle time from a loaded machine's tokens."""


class PhaseClock(logging.Handler):
    """Notes when the embedded model reports it is ready, and the tokens on the wire at each phase's start, so a
    phase's tokens (and its idle seconds, estimated from them) can be added up for any path the search can take."""

    def __init__(self, wire: WireClock) -> None:
        super().__init__()
        self.wire = wire
        self.ready_at: float | None = None
        self.marks: list[tuple[str, int, int, int]] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("embedded model ready"):
            self.ready_at = time.monotonic()
        if message.startswith(PHASE_STARTS):
            self.marks.append((message, *self.wire.totals()))

    def phase_lines(self) -> list[str]:
        """One line per phase: calls, prompt and completion tokens, and the idle seconds they take."""
        lines = []
        for (name, calls, prompt, completion), (_, *ends) in zip(self.marks, self.marks[1:], strict=False):
            calls, prompt, completion = ends[0] - calls, ends[1] - prompt, ends[2] - completion
            idle = prompt * IDLE_S_PER_PROMPT_TOKEN + completion * IDLE_S_PER_COMPLETION_TOKEN
            lines.append(f"  phase from '{name[:60]}': calls {calls:>3}  prompt {prompt:>6}  completion {completion:>5}"
                         f"  idle estimate {idle:>4.0f} s")
        return lines


def server_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a live process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, help="server threads (default: MEMEVO_LLAMA_THREADS, else cores)")
    parser.add_argument("--config", type=Path, default=QUICKSTART, help="the evolve config (default: the quickstart's)")
    parser.add_argument("--warm-cache", action="store_true", help="keep the user's response cache")
    args = parser.parse_args()
    if args.threads:
        os.environ["MEMEVO_LLAMA_THREADS"] = str(args.threads)
    configure_terminal()
    wire = WireClock()
    clock = PhaseClock(wire)
    logging.getLogger("memevo").addHandler(clock)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as scratch:
        cache = None if args.warm_cache else Path(scratch) / "cache"
        started = time.monotonic()
        with LLMHub(cache_dir=cache) as hub:
            result = run_evolution(load_evolve_config(args.config), run_dir=Path(scratch) / "run", hub=hub,
                                   resume=False)
            server = hub._server  # noqa: SLF001 - the benchmark reads the process it measures
            cpu = server_cpu_s(server._process.pid) if server and server._process else None  # noqa: SLF001
        ended = time.monotonic()
    ready = clock.ready_at or started
    evolution = ended - ready
    usage = result.usage
    total = usage.total()
    print(f"\nload average before {load_before[0]:.2f}/{load_before[1]:.2f}/{load_before[2]:.2f}, after "
          f"{'/'.join(f'{value:.2f}' for value in os.getloadavg())} on {os.cpu_count()} cores")
    print(f"wall: model start {ready - started:.1f} s, evolution {evolution:.0f} s ({evolution / 60:.1f} min)")
    print(f"calls {total.calls} ({total.cache_hits} from the cache), prompt tokens {total.prompt_tokens}, "
          f"completion tokens {total.completion_tokens}")
    for role, counts in sorted(usage.by_role.items()):
        print(f"  {role:<12} calls {counts.calls:>4}  prompt {counts.prompt_tokens:>7}  completion "
              f"{counts.completion_tokens:>6}")
    for kind, wire_kind in sorted(wire.kinds.items()):
        print(f"  on the wire: {kind:<8} calls {wire_kind.calls:>4}  prompt {wire_kind.prompt_tokens:>7}  completion "
              f"{wire_kind.completion_tokens:>6}  at the token cap {wire_kind.at_cap:>3}  {wire_kind.seconds:>5.0f} s")
    for phase in clock.phase_lines():
        print(phase)
    _, prompt, completion = wire.totals()
    print(f"idle estimate from the tokens on the wire: {prompt * IDLE_S_PER_PROMPT_TOKEN + completion * IDLE_S_PER_COMPLETION_TOKEN:.0f} s "
          f"({prompt} prompt and {completion} completion tokens at {IDLE_S_PER_PROMPT_TOKEN * 1000:.2f} and "
          f"{IDLE_S_PER_COMPLETION_TOKEN * 1000:.1f} idle ms each)")
    print(f"server busy share {wire.busy_s / evolution:.0%} ({wire.busy_s:.0f} s with a request on the wire)"
          + (f"; server CPU {cpu:.0f} s" if cpu is not None else "; server CPU n/a (no embedded server ran)"))
    kept = "the seed: no candidate beat it on validation" if result.best.id == result.seed.id else result.best.label
    print(f"stopped: {result.stop_reason}; best {kept}; the test lines memevo evolve ends with:")
    for line in held_out_lines(result.objective, result.seed_scores, result.best_scores, result.seed_user_scores,
                               result.best_user_scores):
        print(line)


if __name__ == "__main__":
    main()
