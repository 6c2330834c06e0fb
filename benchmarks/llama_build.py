"""What the portable llama.cpp build costs against a native one, on a machine where both run.

memevo installs llama-cpp-python built with GGML_NATIVE=OFF and at most AVX2 (agents/llm/llama_build.py)
because a native build crashed on AVX-512/AMX CPUs. This measures prompt processing and generation
speed of the embedded SmolLM2 model under the installed (portable) build and under another
interpreter that has a native build, alternating rounds so that machine load hits both alike.

    python benchmarks/llama_build.py --other-python /path/to/native-venv/bin/python [--rounds 3]

Prints tokens per second per build (best round) and the ratios native / portable.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

PROMPT_WORDS = 300
GENERATED_TOKENS = 48


def measure(model_path: str, threads: int) -> dict[str, float | str]:
    """Prompt and generation tokens per second of the installed llama-cpp-python, on one fresh context."""
    import llama_cpp

    model = llama_cpp.Llama(model_path, n_ctx=2048, n_threads=threads, n_threads_batch=threads,
                            verbose=False)  # fmt: skip
    prompt = " ".join(["The quick brown fox jumps over the lazy dog near the river bank."] * (PROMPT_WORDS // 12))
    prompt_tokens = len(model.tokenize(prompt.encode()))
    model.reset()
    started = time.perf_counter()
    model.eval(model.tokenize(prompt.encode()))
    prompt_s = time.perf_counter() - started
    model.reset()
    started = time.perf_counter()
    generated = 0
    for token in model.generate(model.tokenize(b"Once upon a time"), temp=0.0):
        generated += 1
        if generated >= GENERATED_TOKENS:
            break
    generation_s = time.perf_counter() - started
    info = llama_cpp.llama_print_system_info()
    return {
        "prompt_tok_s": prompt_tokens / prompt_s,
        "generation_tok_s": generated / generation_s,
        "system_info": info.decode() if isinstance(info, bytes) else str(info),
    }


def _measure_in(python: str, model_path: str, threads: int) -> dict[str, float | str]:
    """Measured in a fresh interpreter (the other build needs no memevo, only llama-cpp-python)."""
    command = [python, str(Path(__file__).resolve()), "--measure", model_path, "--threads", str(threads)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--other-python", help="an interpreter whose llama-cpp-python is a native build")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--measure", metavar="MODEL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.threads)))
        return
    if not args.other_python:
        parser.error("--other-python is required")
    from memevo.agents.llm.local_server import local_model_path

    model_path = str(local_model_path())
    builds = {"portable": sys.executable, "native": args.other_python}
    best: dict[str, dict[str, float | str]] = {}
    for _ in range(args.rounds):
        for name, python in builds.items():
            result = _measure_in(python, model_path, args.threads)
            kept = best.setdefault(name, result)
            for key in ("prompt_tok_s", "generation_tok_s"):
                kept[key] = max(float(kept[key]), float(result[key]))
    print(f"{'build':<10}{'prompt tok/s':>14}{'generation tok/s':>18}  system info")
    for name, result in best.items():
        print(f"{name:<10}{result['prompt_tok_s']:>14.1f}{result['generation_tok_s']:>18.1f}  {result['system_info']}")
    for key, label in (("prompt_tok_s", "prompt"), ("generation_tok_s", "generation")):
        ratio = float(best["native"][key]) / float(best["portable"][key])
        print(f"native / portable, {label}: {ratio:.3f}")


if __name__ == "__main__":
    main()
