"""Every agent kind on the quickstart world and on a LoCoMo subset, with no evolution: the README's memory-systems table.

The kinds and their settings are the arms of ``experiments/memory-systems/compare-quickstart.yaml`` (native, RAG
with BM25 or embeddings per message or per session, AWI, AWE, A-Mem, Mem0), on the model that config names (the
embedded SmolLM2-135M unless an endpoint is set). Each arm is one ``memevo eval`` run (``environments.evaluate``):

- the quickstart world: the first ``--users`` of the config's procedural users, on-policy with the template simulator, multiple-choice
  answers; accuracy with a 95% Wilson interval over the questions; the upper bound is asked once, with the first arm;
- a LoCoMo subset cut from ``--locomo`` (``locomo10.json``, not shipped): one conversation's first ``--sessions``
  sessions and the questions whose evidence lies in them; LoCoMo's score (token F1, adversarial questions by
  choice) with a seeded 95% bootstrap interval over the questions.

Calls and tokens are the agent's (replies, writes, embeddings, answers; not the upper bound) over its whole run, per
question asked. Each arm runs in its own folder under ``--out``; a rerun skips finished arms and resumes the others.

    python benchmarks/memory_systems.py --locomo locomo10.json [--conversation 1 --sessions 1] [--arms a,b] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.quickstart_world import wilson  # noqa: E402
from memevo.agents.policy import MemoryPolicy  # noqa: E402
from memevo.core.errors import Interrupted, RunFailedError, UserInputError  # noqa: E402
from memevo.environments.amemgym.data.io import save_items  # noqa: E402
from memevo.environments.eval_run import EvalRequest  # noqa: E402
from memevo.environments.evaluate import evaluate  # noqa: E402
from memevo.environments.rundir import INPUTS_FILE  # noqa: E402
from memevo.evolve.ablation.config import load_ablation_config, resolve_arm  # noqa: E402
from memevo.evolve.config import EvolveConfig  # noqa: E402
from memevo.evolve.runtime import load_users  # noqa: E402
from memevo.evolve.stats import bootstrap_ci  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ARMS_CONFIG = ROOT / "experiments" / "memory-systems" / "compare-quickstart.yaml"


def arm_configs(names: list[str] | None) -> dict[str, EvolveConfig]:
    """Each arm's resolved config (seed 0), in the ablation's order; ``names`` picks some."""
    ablation = load_ablation_config(ARMS_CONFIG)
    unknown = set(names or []) - set(ablation.arm_names)
    if unknown:
        raise SystemExit(f"--arms: no arm {sorted(unknown)} in {ARMS_CONFIG} (known: {', '.join(ablation.arm_names)})")
    return {arm.name: resolve_arm(ablation, arm, 0) for arm in ablation.arms if names is None or arm.name in names}


def quickstart_data(config: EvolveConfig, out: Path) -> Path:
    """The users the config's evolution would play, as a data file (byte-identical for the same settings)."""
    path = out / "quickstart-world.json"
    save_items(load_users(config), path)
    return path


def evidence_sessions(question: dict[str, Any]) -> set[int]:
    """Sessions a LoCoMo question's evidence cites (``D3:12`` is session 3; the file also has ``D:11:26`` and
    several references in one string); empty when it cites none or a reference names no dialog turn."""
    found = [re.findall(r"D:?(\d+):\d+", ref) for ref in question.get("evidence", [])]
    if not found or not all(found):
        return set()
    return {int(session) for sessions in found for session in sessions}


def locomo_subset(source: Path, conversation: int, sessions: int, out: Path) -> tuple[Path, int]:
    """One conversation's first ``sessions`` sessions and the questions answerable from them (their evidence lies
    there), written as a LoCoMo file; returns it with the number of questions kept."""
    samples = json.loads(source.read_text(encoding="utf-8"))
    sample = samples[conversation]
    kept_keys = {f"session_{n}" for n in range(1, sessions + 1)} | {f"session_{n}_date_time" for n in
                                                                     range(1, sessions + 1)}
    dialog = {key: value for key, value in sample["conversation"].items()
              if not key.startswith("session_") or key in kept_keys}
    questions = [q for q in sample["qa"] if evidence_sessions(q) and max(evidence_sessions(q)) <= sessions]
    path = out / f"locomo-{sample['sample_id']}-sessions{sessions}.json"
    path.write_text(json.dumps([{**sample, "conversation": dialog, "qa": questions}]), encoding="utf-8")
    return path, len(questions)


def run_arm(policy: MemoryPolicy, request: dict[str, Any], folder: Path) -> dict[str, Any]:
    """The arm's ``summary.json``, from its run here or from an earlier one (a started run is resumed)."""
    summary = folder / "summary.json"
    if not summary.exists():
        resume = (folder / INPUTS_FILE).exists() or (folder / "run").exists()
        evaluate(EvalRequest(policy=policy, out=folder, resume=resume, **request),
                 resume_hint=f"python {' '.join(sys.argv)}")
    return json.loads(summary.read_text(encoding="utf-8"))


def minutes(folder: Path) -> float:
    """An arm's wall time: from its run folder's first record (``inputs.json``) to its ``summary.json``; a run
    stopped and resumed counts the pause too."""
    return ((folder / "summary.json").stat().st_mtime - (folder / INPUTS_FILE).stat().st_mtime) / 60


def interval(folder: Path, free_text: bool) -> str:
    """Mean credit per question with its 95% interval: Wilson for right/wrong answers, bootstrap for F1."""
    values = [json.loads(line) for line in (folder / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
    credit = [float(v["correct"]) if v["score"] is None else float(v["score"]) for v in values]
    if not credit:
        return "n/a: no question asked"
    mean = sum(credit) / len(credit)
    if free_text:
        ci = bootstrap_ci(credit)
        low, high = ci.low, ci.high
    else:
        low, high = wilson(sum(credit), len(credit))
    return f"{mean:.3f} [{low:.2f}, {high:.2f}]"


def row(name: str, folder: Path, summary: dict[str, Any], free_text: bool) -> str:
    scores, usage = summary["scores"], summary["usage"]["by_role"].get("agent", {})
    asked = scores["n_questions"]
    tokens = usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)
    writes = "n/a: no write path" if scores.get("write_requests") is None else (
        f"{scores['write_requests']} / {scores['write_failures']}")
    cached = f"{usage.get('cache_hits', 0)} of {usage.get('calls', 0)}"
    return (f"| {name} | {interval(folder, free_text)} | {usage.get('calls', 0) / asked:.1f} | {tokens / asked:.0f} | "
            f"{writes} | {minutes(folder):.1f} ({cached}) |")


def table(title: str, free_text: bool, rows: list[str]) -> str:
    credit = "score (LoCoMo F1) [95% bootstrap interval]" if free_text else "accuracy [95% Wilson interval]"
    return "\n".join([title, "", f"| arm | {credit} | calls per question | tokens per question | "
                      "write requests / failures | minutes (agent calls from the response cache) |", "|---|---|---|---|---|---|", *rows, ""])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--locomo", type=Path, help="LoCoMo's locomo10.json (without it the LoCoMo table is skipped)")
    parser.add_argument("--conversation", type=int, default=1, help="which of its conversations (0-based; the "
                        "default, conv-30, has the most questions answerable from its first session: 16)")
    parser.add_argument("--sessions", type=int, default=1, help="its first N sessions")
    parser.add_argument("--arms", help="comma-separated arm names (default: every arm of the config)")
    parser.add_argument("--users", type=int, default=2, help="quickstart users played (the first N of the world)")
    parser.add_argument("--worlds", default="quickstart,locomo", help="quickstart, locomo or both")
    parser.add_argument("--out", type=Path, default=Path("runs/memory-systems-benchmark"))
    args = parser.parse_args()
    started, load_at_start = time.monotonic(), os.getloadavg()[0]
    configs = arm_configs(args.arms.split(",") if args.arms else None)
    args.out.mkdir(parents=True, exist_ok=True)
    first = next(iter(configs.values()))
    worlds: dict[str, tuple[str, dict[str, Any], bool]] = {}
    if "quickstart" in args.worlds:
        episode = first.episode
        worlds["quickstart"] = ("Quickstart world (on-policy, template simulator)", {
            "data": str(quickstart_data(first, args.out)), "rounds_init": episode.rounds_init,
            "rounds_update": episode.rounds_update, "simulator": episode.simulator, "users": args.users}, False)
    if "locomo" in args.worlds and args.locomo is not None:
        subset, asked = locomo_subset(args.locomo, args.conversation, args.sessions, args.out)
        worlds["locomo"] = (f"LoCoMo subset: conversation {args.conversation}, sessions 1-{args.sessions}, "
                            f"{asked} questions", {"data": str(subset), "environment": "locomo"}, True)
    for world, (title, request, free_text) in worlds.items():
        rows = []
        for index, (name, config) in enumerate(configs.items()):
            folder = args.out / world / name
            asks_upper_bound = world == "quickstart" and index == 0
            try:
                summary = run_arm(config.seed.policy, {**request, "upper_bound": asks_upper_bound}, folder)
            except (RunFailedError, UserInputError) as error:  # the arm's row says n/a; a rerun resumes it
                rows.append(f"| {name} | n/a: failed ({type(error).__name__}: {str(error).splitlines()[0]}) |||||")
                print(rows[-1], file=sys.stderr, flush=True)
                continue
            rows.append(row(name, folder, summary, free_text))
            print(rows[-1], file=sys.stderr, flush=True)
            if asks_upper_bound:
                scores = summary["scores"]
                title += f"; random {scores['random_baseline']:.3f}, upper bound {scores['upper_bound']:.3f}"
        print(table(title, free_text, rows), flush=True)
    print(f"wall time of this run {(time.monotonic() - started) / 60:.1f} minutes; 1-minute load average {load_at_start:.1f} at "
          f"the start, {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    try:
        main()
    except Interrupted as stop:  # finished arms are kept; the message says how to resume
        print(stop, file=sys.stderr)
        sys.exit(stop.exit_code)
