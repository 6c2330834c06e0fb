"""``memevo eval``: score one agent config on an environment and write records, summary and plot.

The command only reads its options into an ``EvalRequest``; ``environments.evaluate`` runs it (the Python API
calls the same function), and says which files it writes.
"""

# Annotations are evaluated at import (no ``from __future__ import annotations``): typer builds the options from
# them at every start, and evaluating a command's string annotations (twice, in typer) cost ~20 ms for eval.
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from memevo.agents.config_file import load_policy
from memevo.agents.llm.config import CONCURRENCY_HELP
from memevo.environments.eval_run import DEFAULT_SIMULATOR
from memevo.environments.evaluate import EvalRequest, evaluate
from memevo.environments.metrics import DEFAULT_MIN_PROBE_COVERAGE
from memevo.environments.registry import DEFAULT_ENVIRONMENT, NAMES_HELP, OPTION_HELP, parse_options
from memevo.environments.resume import resume_command


class SimulatorKind(str, Enum):
    template = "template"
    llm = "llm"


def eval_command(
    ctx: typer.Context,
    agent: Annotated[Path, typer.Option("--agent", help="Agent policy file: memevo YAML/JSON (memevo config example "
                                        "agent) or an AMemGym agent JSON.")],
    env: Annotated[str, typer.Option("--env", help="data.json, dataset folder/file, or Hugging Face dataset id "
                                     "(the format: experiments/REFERENCE.md).")],
    out: Annotated[Path, typer.Option("--out", help="Output folder.")],
    upper_bound: Annotated[bool, typer.Option("--upper-bound",
                                              help="Compute the upper bound and memory score.")] = False,
    no_memory_baseline: Annotated[bool, typer.Option(
        "--no-memory-baseline", help="Also ask the agent's LLM every question with no memory at all, and report "
        "the agent's gain over it (MemGym's memory-isolated score).")] = False,
    diagnose: Annotated[bool, typer.Option("--diagnose", help="Probe states for the write/read/util split.")] = False,
    min_probe_coverage: Annotated[float, typer.Option(
        min=0.0, max=1.0, help="Report the write/read/util split only when at least this share of the wrong "
        "answers has readable probes.")] = DEFAULT_MIN_PROBE_COVERAGE,
    resume: Annotated[bool, typer.Option("--resume", help="Continue the run in --out.")] = False,
    users: Annotated[int | None, typer.Option("--users", min=1, help="Only the first N users.")] = None,
    simulator: Annotated[SimulatorKind, typer.Option(
        "--simulator", help="User simulator: template (scripted replies, no calls; the default, as in memevo evolve "
        "and the Python API) or llm (AMemGym's protocol; scores differ from template's).")
    ] = SimulatorKind(DEFAULT_SIMULATOR),
    simulator_model: Annotated[str | None, typer.Option(
        "--simulator-model", help="Model of the LLM user simulator (same endpoint as the agent); default: the "
        "agent's model. AMemGym used a separate, stronger one (gpt-4.1).")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not use the LLM response cache.")] = False,
    amemgym_compat: Annotated[bool, typer.Option(
        "--amemgym-compat", help="AMemGym's protocol throughout: random fallback on unreadable answers, free "
        "decoding, no probe retry, whole-prompt retrieval queries, plain JSON mode for memory writes, the "
        "simulator dated at the period's end. Also on when the agent config sets amemgym_compat.")] = False,
    amemgym_source: Annotated[Path | None, typer.Option(
        "--amemgym-source", help="An AMemGym checkout: read its prompt texts from there at run time (memevo "
        "ships its own wording).")] = None,
    constrained_answers: Annotated[bool | None, typer.Option(
        "--constrained-answers/--free-answers",
        help="Constrain answers and probes to their JSON schema (default), or leave decoding free as AMemGym "
        "did (the default under --amemgym-compat).")] = None,
    off_policy: Annotated[Path | None, typer.Option("--off-policy", help="Replay the transcripts of the run in this "
                                                    "eval folder instead of live conversations.")] = None,
    rounds_init: Annotated[int, typer.Option(min=1, help="Rounds per session in period 0.")] = 1,
    rounds_update: Annotated[int, typer.Option(min=1, help="Rounds per session in later periods.")] = 2,
    concurrency: Annotated[int | None, typer.Option("--concurrency", min=1, help=CONCURRENCY_HELP)] = None,
    max_concurrent_users: Annotated[int | None, typer.Option(
        min=1, help="Users run at the same time (default: as many as the concurrency).")] = None,
    seed: Annotated[int, typer.Option(help="Seed for the simulator and the compat fallback.")] = 0,
    environment: Annotated[str, typer.Option(
        "--environment", help=f"Which benchmark --env holds, {NAMES_HELP}: simulated users played live (the "
        "default), or a benchmark's sessions replayed, then its questions.")] = DEFAULT_ENVIRONMENT,
    judge_model: Annotated[str | None, typer.Option(
        "--judge-model", help="Model (the agent's endpoint) grading free-text answers where the benchmark uses an "
        "LLM judge; default: the agent's model.")] = None,
    dialog_field: Annotated[str | None, typer.Option(
        "--dialog-field", help="memorybench: the field whose training dialogs are replayed (default: dialog). Its "
        "LoCoMo and DialSim datasets have only per-baseline dialogs: dialog_mem0, dialog_a_mem, dialog_bm25, ...; "
        "other datasets replay their own dialog.")] = None,
    env_option: Annotated[list[str] | None, typer.Option("--env-option", metavar="NAME=VALUE", help=OPTION_HELP)] = None,
) -> None:
    """Evaluate an agent on a benchmark (AMemGym on-policy by default) and write records and a summary (AMemGym:
    also a per-period plot)."""
    request = EvalRequest(
        policy=load_policy(agent), data=env, out=out, environment=environment,
        options=_options(env_option or [], dialog_field), resume=resume, users=users,
        use_cache=not no_cache, concurrency=concurrency, max_concurrent_users=max_concurrent_users, seed=seed,
        constrained_answers=constrained_answers, judge_model=judge_model, upper_bound=upper_bound,
        no_memory_baseline=no_memory_baseline, diagnose=diagnose, min_probe_coverage=min_probe_coverage,
        simulator=simulator.value, simulator_model=simulator_model, rounds_init=rounds_init,
        rounds_update=rounds_update, off_policy=off_policy, amemgym_compat=amemgym_compat,
        amemgym_source=amemgym_source)
    typer.echo(evaluate(request, resume_hint=resume_command(ctx)).headline)


def _options(words: list[str], dialog_field: str | None) -> dict[str, str]:
    """The environment's own settings: ``--env-option`` words, and ``--dialog-field`` (memorybench's, kept as a
    flag of its own)."""
    options = parse_options(words, field="--env-option")
    return options if dialog_field is None else {**options, "dialog_field": dialog_field}
