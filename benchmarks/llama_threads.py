"""Throughput of the embedded model by thread count and OpenMP waiting policy, idle and beside busy programs.

Each setting (threads, OpenMP waiting policy) runs in a child process of its own, since OpenMP reads the policy
once at load: it reads a ``--prompt-tokens`` prompt and generates ``--generate`` tokens, and reports tokens per
second of each. The settings take turns for ``--rounds`` rounds (so all see the same load) and the table shows their
medians, first on the machine as found, then with ``--busy`` more processes spinning beside it. The last line of
each table is memevo's setting (``local_server.default_threads`` and ``SERVER_ENV``'s waiting policy) over the
best one. The load average is printed: on a shared machine "as found" means what the other programs left.
``--spins`` adds settings whose threads spin that many rounds before they sleep (how memevo's count was chosen).

    python benchmarks/llama_threads.py [--busy 2] [--rounds 2] [--prompt-tokens 400] [--generate 32] [--spins N ...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memevo.agents.llm.local_server import SERVER_ENV, default_threads, local_model_path  # noqa: E402

SPIN = "while True: pass"
OPENMP_WAITING = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")
"""The variables a setting sets; the caller's values would otherwise leak into every setting."""
TEXT = "the user likes long walks by the river and reads books about history every evening " * 200


def one_setting(threads: int, prompt_tokens: int, generate: int) -> dict[str, float]:
    """(In the child) prompt and generated tokens per second of one fresh prompt with ``threads``."""
    import llama_cpp

    llama = llama_cpp.Llama(model_path=str(local_model_path()), n_ctx=2048, n_threads=threads,
                            n_threads_batch=threads, verbose=False)
    tokens = llama.tokenize(TEXT.encode())[:prompt_tokens]
    started = time.perf_counter()
    llama.eval(tokens)
    read_s = time.perf_counter() - started
    started = time.perf_counter()
    for _ in range(generate):
        llama.eval([llama.sample(temp=0.0)])
    return {"prompt": len(tokens) / read_s, "generated": generate / (time.perf_counter() - started)}


def policy_env(policy: str) -> dict[str, str]:
    """The OpenMP variables of a policy label: ``PASSIVE``/``ACTIVE``, or ``SPIN<n>`` (spin n rounds, then sleep)."""
    if policy.startswith("SPIN"):
        return {"GOMP_SPINCOUNT": policy.removeprefix("SPIN")}
    return {"OMP_WAIT_POLICY": policy}


def memevo_policy() -> str:
    """The label of the waiting policy the embedded server runs with."""
    if "GOMP_SPINCOUNT" in SERVER_ENV:
        return f"SPIN{SERVER_ENV['GOMP_SPINCOUNT']}"
    return SERVER_ENV["OMP_WAIT_POLICY"]


def run_setting(threads: int, policy: str, args: argparse.Namespace) -> dict[str, float]:
    command = [sys.executable, __file__, "--child", str(threads), "--prompt-tokens", str(args.prompt_tokens),
               "--generate", str(args.generate)]
    inherited = {key: value for key, value in os.environ.items() if key not in OPENMP_WAITING}
    done = subprocess.run(command, env={**inherited, **policy_env(policy)}, capture_output=True, text=True,
                          check=True)
    return dict(json.loads(done.stdout.splitlines()[-1]))


def table(label: str, args: argparse.Namespace) -> None:
    cores, chosen = os.cpu_count() or 1, (default_threads(), memevo_policy())
    extra = [(cores, f"SPIN{spins}") for spins in args.spins]
    settings = list(dict.fromkeys([(1, "PASSIVE"), (cores, "PASSIVE"), (cores, "ACTIVE"), *extra, chosen]))
    loads = []
    runs: dict[tuple[int, str], list[dict[str, float]]] = {setting: [] for setting in settings}
    for _ in range(args.rounds):
        for setting in settings:
            loads.append(os.getloadavg()[0])
            runs[setting].append(run_setting(*setting, args))
    medians = {setting: {kind: statistics.median(run[kind] for run in found) for kind in ("prompt", "generated")}
               for setting, found in runs.items()}
    print(f"{label} (load average {min(loads):.1f}-{max(loads):.1f}, {args.rounds} rounds, medians)")
    for (threads, policy), figures in medians.items():
        mark = "  <- memevo" if (threads, policy) == chosen else ""
        print(f"  {threads} thread(s) {policy:<10}: prompt {figures['prompt']:6.1f} tok/s  "
              f"generated {figures['generated']:5.1f} tok/s{mark}")
    mine = medians[chosen]
    ratios = {kind: mine[kind] / max(figures[kind] for figures in medians.values()) for kind in mine}
    print(f"  memevo's setting over the best: prompt {ratios['prompt']:.2f}x, generated {ratios['generated']:.2f}x")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", type=int, default=2, help="spinning processes for the busy case")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--prompt-tokens", type=int, default=400)
    parser.add_argument("--generate", type=int, default=32)
    parser.add_argument("--spins", type=int, nargs="*", default=[],
                        help="also try every core with OpenMP spinning this many rounds before it sleeps")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one_setting(args.child, args.prompt_tokens, args.generate)))
        return 0
    table("as found", args)
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(args.busy)]
    try:
        time.sleep(1.0)
        table(f"with {args.busy} busy processes", args)
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
