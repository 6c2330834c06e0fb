"""Usage after kills: what the endpoint served, what the run's usage ledger counts, and the requests resumes sent again.

``memevo eval`` on tests/fixtures/amemgym_small.json against the killing endpoint (tests/doubles/killing_endpoint.py,
a TEST DOUBLE that records every request it answers), killed ``--kills`` times in a row (``kill -9`` planted in the
process) just after its ``--at``-th counted answer, or ``--in-flight`` as its ``--at``-th reply arrives (not yet in
the cache), then resumed to its end. Prints, over all processes: requests served, requests the ledger counts as
answered and as unknown, and requests served twice (sent again by a resume).

Run from the repository root with the interpreter of the version to measure (the worktree's or another's venv):
``python benchmarks/usage_kills.py [--kills 5] [--at 6] [--latency 0.0] [--width 1] [--in-flight]``
Measured 2026-11-27 on the shared 2-core box, main at 2c88a87 -> this version (requests sent again by resumes; ledger):
defaults: 30 -> 0 of 59 -> 29 served, 59 -> 29 answered; ``--in-flight``: 30 -> 5 sent again (each the reply the kill
cut off), 54 answered of 59 served (5 missing) -> 29 answered + 5 unknown of 34 served; ``--width 3 --latency 0.05
--kills 3``: 22 -> 2 sent again (answered to the dead process), 47 answered of 52 served -> 29 answered + 3 unknown
of 31 served (one unknown request never reached the endpoint).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.doubles.eval_process import PRELOADED, run_eval  # noqa: E402
from tests.doubles.kill_points import kill_point, start_fork_server  # noqa: E402
from tests.doubles.killing_endpoint import KillingEndpoint, memory_agent_reply, sent_again  # noqa: E402

AFTER_COUNT = ("memevo.agents.llm.accounting:Accounting.record_call", "after")
IN_FLIGHT = ("memevo.agents.llm.cache:ResponseCache.put", "before")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--at", type=int, default=6, help="the process's call at which it is killed")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds the endpoint takes per reply")
    parser.add_argument("--in-flight", action="store_true", help="kill as a reply arrives, before it is cached")
    parser.add_argument("--width", type=int, default=1, help="requests at once (two users at once from 2)")
    args = parser.parse_args()
    target, when = IN_FLIGHT if args.in_flight else AFTER_COUNT
    start_fork_server(PRELOADED)
    with KillingEndpoint(memory_agent_reply) as endpoint, tempfile.TemporaryDirectory() as folder:
        endpoint.server.latency_s = args.latency
        out = Path(folder) / "out"
        served: list[str] = []
        resent = 0
        for number in range(args.kills + 1):
            kill = kill_point(target, args.at, when) if number < args.kills else None
            process = run_eval(endpoint, out, resume=number > 0, kill=kill, width=args.width)
            if process.code != (0 if kill is None else -9):
                sys.exit(f"process {number} ended with {process.code}:\n{process.output}")
            resent += sent_again(served, process.served)
            served += process.served
        unknown = getattr(process.usage, "unknown_calls", None)
        print(f"kills: {args.kills} ({'as a reply arrives' if args.in_flight else 'just after a counted answer'}, "
              f"call {args.at} of each process; {args.width} request(s) at once; endpoint latency {args.latency} s)")
        print(f"requests served: {len(served)}, sent again by a resume: {resent}")
        print(f"ledger: {process.sent} answered + "
              f"{'n/a (this version books no requests)' if unknown is None else unknown} unknown")


if __name__ == "__main__":
    main()
