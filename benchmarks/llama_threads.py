"""Throughput of the embedded model with memevo's thread choice against 1 thread and every core, idle and busy.

For each machine state (as it is, then with ``--busy`` more processes spinning beside it) the benchmark asks memevo
which thread count it would choose (``local_server.default_threads``, which sees the state), then loads the model
with 1 thread, every core and that choice, reads a ``--prompt-tokens`` prompt and generates ``--generate`` tokens,
and prints prompt and generated tokens per second and memevo's choice over the best of the others. The load average
is printed too: on a shared machine "idle" means what the other programs left.

    python benchmarks/llama_threads.py [--busy 2] [--prompt-tokens 600] [--generate 32]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as the server runs (before llama.cpp loads OpenMP)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memevo.agents.llm.local_server import default_threads, local_model_path  # noqa: E402

SPIN = "while True: pass"


def throughput(threads: int, prompt_tokens: int, generate: int) -> tuple[float, float]:
    """(prompt tokens/s, generated tokens/s) of one fresh prompt and its continuation with ``threads``."""
    import llama_cpp

    llama = llama_cpp.Llama(model_path=str(local_model_path()), n_ctx=2048, n_threads=threads,
                            n_threads_batch=threads, verbose=False)
    words = ("the user likes long walks by the river and reads books about history every evening " * 200).split()
    tokens = llama.tokenize(" ".join(words).encode())[:prompt_tokens]
    started = time.perf_counter()
    llama.eval(tokens)
    read_s = time.perf_counter() - started
    started = time.perf_counter()
    for _ in range(generate):
        llama.eval([llama.sample(temp=0.0)])
    generated_s = time.perf_counter() - started
    llama.close()
    return len(tokens) / read_s, generate / generated_s


def measure(label: str, prompt_tokens: int, generate: int) -> None:
    chosen, cores = default_threads(), os.cpu_count() or 1
    load = os.getloadavg()[0]
    results = {threads: throughput(threads, prompt_tokens, generate) for threads in sorted({1, cores, chosen})}
    for threads, (prompt, generated) in results.items():
        print(f"{label:<22} load {load:4.1f}  {threads} thread(s): prompt {prompt:6.1f} tok/s  generated {generated:5.1f} tok/s"
              + ("  <- memevo's choice" if threads == chosen else ""))
    best_prompt = max(prompt for prompt, _ in results.values())
    best_generated = max(generated for _, generated in results.values())
    print(f"{label:<22} memevo's choice ({chosen}) over the best: prompt {results[chosen][0] / best_prompt:.2f}x, "
          f"generated {results[chosen][1] / best_generated:.2f}x")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", type=int, default=2, help="spinning processes for the busy case")
    parser.add_argument("--prompt-tokens", type=int, default=600)
    parser.add_argument("--generate", type=int, default=32)
    args = parser.parse_args()
    measure("as found", args.prompt_tokens, args.generate)
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(args.busy)]
    try:
        time.sleep(1.0)
        measure(f"+{args.busy} busy processes", args.prompt_tokens, args.generate)
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
