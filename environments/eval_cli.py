"""``memevo eval``: score one agent config on an environment and write records, summary and plot.

Outputs under ``--out``: ``run/`` (per user/period results and agent states; ``--resume`` continues it),
``upper_bound.json``, ``no_memory.json``, ``questions.jsonl`` + ``questions.csv`` (one row per question asked),
``summary.json`` + ``summary.csv`` (overall and per-period scores, failure split, the upper bound's
unparsed replies), ``usage.csv`` (calls, tokens and dollars by role) and ``periods.png``; the run-folder
guards of ``rundir`` add ``.lock``, ``inputs.json`` (what a resume must match) and ``usage.jsonl`` (every
call of every process, so usage survives kills).
"""

# Annotations are evaluated at import (no ``from __future__ import annotations``): typer builds the options from
# them at every start, and evaluating a command's string annotations (twice, in typer) cost ~20 ms for eval.
import asyncio
import csv
import json
from collections.abc import Callable, Sequence
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from memevo.agents.base import MemoryAgent
from memevo.agents.config_file import load_policy
from memevo.agents.llm.accounting import UsageReport
from memevo.agents.llm.config import CONCURRENCY_HELP
from memevo.agents.llm.protocol import ChatClient
from memevo.agents.policy import MemoryPolicy
from memevo.agents.registry import agent_class, build_agent
from memevo.agents.templates import placeholders_in
from memevo.core.atomic_files import write_json_atomic
from memevo.core.errors import UserInputError
from memevo.core.lazy_model import LazyModel
from memevo.environments.amemgym_prompts import AMemGymPrompts, load_amemgym_prompts
from memevo.environments.data.io import load_items
from memevo.environments.data.models import Item
from memevo.environments.data.validate import check_runnable
from memevo.environments.metrics import (
    DEFAULT_MIN_PROBE_COVERAGE,
    NO_MEMORY_FILE,
    UPPER_BOUND_FILE,
    NoMemoryTable,
    Scores,
    UpperBoundTable,
    UserScores,
    random_baseline,
    score_episodes,
    user_scores,
)
from memevo.environments.metrics._items import item_lookup, item_of
from memevo.environments.metrics.upper_bound import needed_states
from memevo.environments.play import run_items
from memevo.environments.plot_process import PLOT_FILE, PlotProcess
from memevo.environments.progress import configure_terminal, phase
from memevo.environments.records import EpisodeResult
from memevo.environments.registry import DEFAULT_ENVIRONMENT, make_environment
from memevo.environments.resume import resumable, run_resumable
from memevo.environments.rundir import (
    INPUTS_FILE,
    LEDGER_FILE,
    UsageLedger,
    check_inputs,
    claim_run_folder,
    item_fingerprints,
)
from memevo.environments.runner import EpisodeConfig, run_episodes
from memevo.environments.score_text import score_lines
from memevo.environments.simulators.base import UserSimulator
from memevo.environments.simulators.factory import make_simulator
from memevo.environments.store import RunStore
from memevo.environments.table_cache import cached_table

QUESTION_COLUMNS = ("user_id", "period", "question_index", "choice", "gold", "n_choices", "correct", "format_error",
                    "random_fallback", "random_baseline", "upper_bound", "no_memory_correct", "probe_correct",
                    "probe_unread")


class SimulatorKind(str, Enum):
    template = "template"
    llm = "llm"


class EvalOutcome(LazyModel):
    episodes: list[EpisodeResult]
    scores: Scores
    user_scores: list[UserScores]
    upper_bound: UpperBoundTable | None = None
    no_memory: NoMemoryTable | None = None


def _question_rows(episodes: Sequence[EpisodeResult], items: Sequence[Item], upper_bound: UpperBoundTable | None,
                   no_memory: NoMemoryTable | None = None) -> list[dict[str, Any]]:
    by_id = item_lookup(items)
    rows = []
    for episode in episodes:
        item = item_of(episode, by_id)
        for result in episode.periods:
            probes = {probe.question_index: probe for probe in result.probes}
            for record in result.qa:
                probe = probes.get(record.question_index)
                rows.append({
                    **record.model_dump(mode="json"),
                    "question": item.qas[record.question_index].query,
                    "random_baseline": random_baseline(item, record.period, record.question_index),
                    "upper_bound": None if upper_bound is None
                    else upper_bound.score(item, record.period, record.question_index),
                    "no_memory_correct": None if no_memory is None
                    else no_memory.correct(item, record.period, record.question_index),
                    "probe_correct": None if probe is None else all(probe.correct.values()),
                    "probe_unread": None if probe is None else " ".join(probe.unread_keys),
                    "probe": None if probe is None else probe.model_dump(mode="json"),
                })
    return rows


def _write_csv(path: Path, columns: Sequence[str], rows: Sequence[dict[str, Any]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as file:
        writer = csv.DictWriter(file, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def _summary_rows(scores: Scores) -> list[dict[str, Any]]:
    def row(scope: str, part: Any) -> dict[str, Any]:
        failure, probes = part.failure, part.probes
        return {
            "scope": scope,
            **part.model_dump(exclude={"per_period", "failure", "probes"}),
            "write_failure": None if failure is None else failure.write,
            "read_failure": None if failure is None else failure.read,
            "utilization_failure": None if failure is None else failure.utilization,
            "unattributed_failure": None if failure is None else failure.unattributed,
            "probe_coverage": None if probes is None else probes.coverage,
            "probe_format_error_rate": None if probes is None else probes.probe_format_error_rate,
        }

    return [row("overall", scores), *(row(f"period {p.period}", p) for p in scores.per_period)]


def write_outputs(out: Path, outcome: EvalOutcome, items: Sequence[Item], usage: UsageReport,
                  meta: dict[str, Any], plot: PlotProcess) -> None:
    """Every file of an evaluation except the run store and the per-period plot, which ``plot`` draws meanwhile:
    the caller waits for it with ``plot.wait()`` once it has nothing else to do."""
    plot.draw(outcome.scores, out, title=plot_title(meta.get("agent", ""), meta.get("env", "")))
    rows = _question_rows(outcome.episodes, items, outcome.upper_bound, outcome.no_memory)
    with (out / "questions.jsonl").open("w", encoding="utf-8") as file:
        for row in rows:
            file.write(json.dumps(row, ensure_ascii=False) + "\n")
    _write_csv(out / "questions.csv", QUESTION_COLUMNS, rows)
    write_json_atomic(out / "summary.json", {
        **meta,
        "scores": outcome.scores.model_dump(mode="json"),
        "user_scores": [u.model_dump(mode="json") for u in outcome.user_scores],
        "usage": {"by_role": {k: v.model_dump() for k, v in usage.by_role.items()},
                  "total": usage.total().model_dump()},
    })
    summary = _summary_rows(outcome.scores)
    _write_csv(out / "summary.csv", list(summary[0]), summary)
    usage_rows = [{"role": role, **u.model_dump()} for role, u in {**usage.by_role, "total": usage.total()}.items()]
    _write_csv(out / "usage.csv", ["role", *usage.total().model_dump()], usage_rows)


def plot_title(agent: str, env: str) -> str:
    """The per-period plot's title, known from the start of a run (the plot process prepares the figure with it)."""
    return f"{agent} on {env}: scores per period"


async def evaluate(
    make_agent: Callable[[], MemoryAgent],
    items: Sequence[Item],
    simulator: UserSimulator,
    config: EpisodeConfig,
    out: Path,
    *,
    upper_bound_llm: ChatClient | None = None,
    no_memory_llm: ChatClient | None = None,
    min_probe_coverage: float = DEFAULT_MIN_PROBE_COVERAGE,
    replay_from: Path | None = None,
    progress: bool = True,
) -> EvalOutcome:
    """Run (or resume) the episodes into ``out/run``, compute the upper bound and the no-memory baseline
    if asked, and score."""
    async def nothing() -> None:
        return None

    total = sum(len(item.periods) for item in items)
    with phase("users x periods", total, "period", enabled=progress) as bar:
        sessions = simulator if replay_from is None else RunStore(replay_from / "run")
        # Transcripts and consulted memories are on disk and not needed for scoring: memory stays bounded by
        # the users in flight, not by all users. The tables need no episode: they are computed meanwhile.
        episodes, upper_bound, no_memory = await asyncio.gather(
            run_episodes(make_agent, items, sessions, config, RunStore(out / "run"),
                         on_period=lambda _: bar.advance(), traces=False),
            nothing() if upper_bound_llm is None else _upper_bound(upper_bound_llm, items, config,
                                                                   out / UPPER_BOUND_FILE, progress),
            nothing() if no_memory_llm is None else _no_memory(no_memory_llm, items, config, out / NO_MEMORY_FILE,
                                                               progress))
    return EvalOutcome(
        episodes=episodes,
        scores=score_episodes(episodes, items, upper_bound, no_memory=no_memory,
                              min_probe_coverage=min_probe_coverage),
        user_scores=user_scores(episodes, items, upper_bound, no_memory=no_memory),
        upper_bound=upper_bound,
        no_memory=no_memory,
    )


async def _upper_bound(llm: ChatClient, items: Sequence[Item], config: EpisodeConfig, path: Path,
                       progress: bool) -> UpperBoundTable:
    with phase("upper bound", sum(len(needed_states(item)) for item in items), "call", enabled=progress) as bar:
        return await cached_table(UpperBoundTable, llm, items, path, config, on_entry=lambda _: bar.advance())


async def _no_memory(llm: ChatClient, items: Sequence[Item], config: EpisodeConfig, path: Path,
                     progress: bool) -> NoMemoryTable:
    with phase("no-memory baseline", sum(len(item.qas) for item in items), "call", enabled=progress) as bar:
        return await cached_table(NoMemoryTable, llm, items, path, config, on_entry=lambda _: bar.advance())


def _prepare_out(out: Path, resume: bool) -> None:
    """A run starts by recording its inputs (before any LLM call), so a run killed at any point, even
    during the upper bound, can be resumed."""
    started = (out / INPUTS_FILE).exists() or (out / "run").exists()
    if started and not resume:
        raise UserInputError("already holds a run; pass --resume to continue it or choose a new folder",
                             source=str(out))
    if resume and not started:
        raise UserInputError("nothing to resume (no run started here)", source=str(out), field="--resume")
    out.mkdir(parents=True, exist_ok=True)


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
    simulator: Annotated[SimulatorKind, typer.Option("--simulator", help="User simulator.")] = SimulatorKind.llm,
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
        "--environment", help="Which benchmark --env holds: amemgym (simulated users, live) or locomo, longmemeval, "
        "memoryagentbench, memorybench (their sessions replayed, then their questions).")] = DEFAULT_ENVIRONMENT,
    judge_model: Annotated[str | None, typer.Option(
        "--judge-model", help="Model (the agent's endpoint) grading free-text answers where the benchmark uses an "
        "LLM judge; default: the agent's model.")] = None,
    dialog_field: Annotated[str | None, typer.Option(
        "--dialog-field", help="memorybench: the field whose training dialogs are replayed (default: dialog). Its "
        "LoCoMo and DialSim datasets have only per-baseline dialogs: dialog_mem0, dialog_a_mem, dialog_bm25, ...; "
        "other datasets replay their own dialog.")] = None,
) -> None:
    """Evaluate an agent on a benchmark (AMemGym on-policy by default) and write records and a summary (AMemGym:
    also a per-period plot)."""
    if environment != DEFAULT_ENVIRONMENT:
        set_flags = {"--upper-bound": upper_bound, "--no-memory-baseline": no_memory_baseline, "--diagnose": diagnose,
                     "--amemgym-compat": amemgym_compat, "--amemgym-source": amemgym_source is not None,
                     "--off-policy": off_policy is not None}
        for flag, given in set_flags.items():
            if given:
                raise UserInputError("applies to --environment amemgym only", field=flag)
        if dialog_field is not None and environment != "memorybench":
            raise UserInputError("applies to --environment memorybench only", field="--dialog-field")
        benchmark = BenchmarkRun(agent=agent, data=env, out=out, environment=environment, resume=resume,
                                 users=users, no_cache=no_cache, concurrency=concurrency, seed=seed,
                                 max_concurrent_users=max_concurrent_users, judge_model=judge_model,
                                 constrained_answers=constrained_answers,
                                 options={} if dialog_field is None else {"dialog_field": dialog_field})
        typer.echo(evaluate_benchmark(ctx, benchmark))
        return
    if dialog_field is not None:
        raise UserInputError("applies to --environment memorybench only", field="--dialog-field")
    policy = load_policy(agent)
    compat = amemgym_compat or policy.amemgym_compat
    policy = policy.model_copy(update={"amemgym_compat": compat})
    prompts = None if amemgym_source is None else load_amemgym_prompts(amemgym_source)
    if prompts is not None:
        policy = prompts.apply_to(policy)
    items = load_items(env)[:users]
    check_runnable(items, source=env)
    if off_policy is not None:
        _check_replay(off_policy, items)
    config = EpisodeConfig(rounds_init=rounds_init, rounds_update=rounds_update, diagnose=diagnose,
                           amemgym_compat=compat, constrained_answers=constrained_answers,
                           max_concurrent_users=max_concurrent_users or 1, seed=seed,
                           question_prompts=None if prompts is None else prompts.questions)
    policy.llm.concurrency(embedded=False, override=concurrency)  # a bad $MEMEVO_CONCURRENCY stops us here
    simulator_llm = policy.llm if simulator_model is None else policy.llm.model_copy(update={"model": simulator_model})
    inputs = {"data": item_fingerprints(items), "policy": json.loads(policy.canonical_json()),
              "episode": config.protocol(), "simulator": simulator.value,
              "simulator_llm": simulator_llm.model_dump(mode="json") if simulator is SimulatorKind.llm else None,
              "off_policy": None if off_policy is None else str(off_policy.resolve())}
    configure_terminal()

    async def main(plot: PlotProcess) -> str:
        from memevo.agents.llm.hub import LLMHub  # the HTTP client stack loads only when a run starts

        async with LLMHub(use_cache=not no_cache, concurrency=concurrency,
                          accounting=UsageLedger(out / LEDGER_FILE)) as hub:
            llm = hub.client(policy.llm)
            width = max_concurrent_users or llm.width  # users wait on the LLM, so as many as can be served
            run_config = config.model_copy(update={"max_concurrent_users": width})
            simulate = make_simulator(simulator.value, seed, hub.client(simulator_llm), amemgym_compat=compat,
                                      template=None if prompts is None else prompts.simulator)
            outcome = await evaluate(
                lambda: _agent(policy, llm, prompts), items, simulate, run_config, out,
                upper_bound_llm=llm if upper_bound else None, no_memory_llm=llm if no_memory_baseline else None,
                min_probe_coverage=min_probe_coverage, replay_from=off_policy,
            )
            meta = {"agent": policy.kind, "policy_id": policy.policy_id, "model": policy.llm.model, "env": env,
                    "simulator_model": simulator_llm.model if simulator is SimulatorKind.llm else None,
                    "prompts": "memevo" if prompts is None else f"amemgym:{amemgym_source}",
                    "n_items": len(items), "config": run_config.model_dump()}
            write_outputs(out, outcome, items, hub.accounting.report(), meta, plot)
            notes = _protocol_notes(compat, prompts is not None)
            notes += [] if prompts is None else prompts.notes(policy.kind)
            return _headline(outcome.scores, out, notes)

    with claim_run_folder(out, flag="--out", kind="eval"):
        _prepare_out(out, resume)
        check_inputs(out, inputs)
        # from here on a failure or a signal prints the resume command; the plotting stack is imported on another
        # core while the run goes on
        # (a rerun's figure is usually drawn already: its child starts only if the scores changed)
        with resumable(ctx), PlotProcess(start=not (out / PLOT_FILE).exists()) as plot:
            plot.prepare(max(len(item.periods) for item in items), upper_bound, plot_title(policy.kind, env))
            headline = run_resumable(main(plot))
            plot.wait()  # drawn while the other files were written and the LLM hub closed
    typer.echo(headline)


class BenchmarkRun(LazyModel):
    """The ``memevo eval`` options a replayed benchmark uses."""

    agent: Path
    data: str
    out: Path
    environment: str
    resume: bool
    users: int | None
    no_cache: bool
    concurrency: int | None
    seed: int
    max_concurrent_users: int | None
    judge_model: str | None
    constrained_answers: bool | None
    options: dict[str, str] = {}
    """The environment's own settings (``--dialog-field``)."""


def evaluate_benchmark(ctx: typer.Context, run: BenchmarkRun) -> str:
    """Replay a benchmark's items through an agent (resumable per item in ``out/run``), score them and write
    ``summary.json`` and ``questions.jsonl``; returns the headline.

    The items are read before the LLM hub starts and played by an environment made inside it, with the judge: a
    replayed benchmark's item holds everything its scoring reads, so which object read it does not matter."""
    policy = load_policy(run.agent)
    config = EpisodeConfig(constrained_answers=run.constrained_answers, seed=run.seed,
                           max_concurrent_users=run.max_concurrent_users or 1)
    reader = make_environment(run.environment, config, field="--environment", options=run.options)
    items = reader.load_items(run.data, limit=run.users)
    notes = [f"note: {warning}" for warning in getattr(reader, "load_warnings", [])]
    policy.llm.concurrency(embedded=False, override=run.concurrency)
    judge_llm = policy.llm if run.judge_model is None else policy.llm.model_copy(update={"model": run.judge_model})
    inputs = {"environment": run.environment, "data": item_fingerprints(items),
              "policy": json.loads(policy.canonical_json()), "episode": config.protocol(),
              "judge_llm": judge_llm.model_dump(mode="json")}
    configure_terminal()

    async def main() -> str:
        from memevo.agents.llm.hub import LLMHub

        async with LLMHub(use_cache=not run.no_cache, concurrency=run.concurrency,
                          accounting=UsageLedger(run.out / LEDGER_FILE)) as hub:
            llm = hub.client(policy.llm)
            width = run.max_concurrent_users or llm.width
            run_config = config.model_copy(update={"max_concurrent_users": width})
            environment = make_environment(run.environment, run_config, judge=hub.client(judge_llm),
                                           options=run.options)
            with phase("items", len(items), "item") as bar:
                episodes = await run_items(environment, lambda: build_agent(policy, llm), items, None,
                                           RunStore(run.out / "run"), on_period=lambda _: bar.advance(),
                                           traces=False)
            scores = score_episodes(episodes, items)
            usage = hub.accounting.report()
            with (run.out / "questions.jsonl").open("w", encoding="utf-8") as file:
                for episode in episodes:
                    for period in episode.periods:
                        for record in period.qa:
                            file.write(record.model_dump_json() + "\n")
            write_json_atomic(run.out / "summary.json", {
                "environment": run.environment, "agent": policy.kind, "policy_id": policy.policy_id,
                "model": policy.llm.model, "env": run.data, "n_items": len(items),
                "scores": scores.model_dump(mode="json"),
                "user_scores": [u.model_dump(mode="json") for u in user_scores(episodes, items)],
                "usage": {"by_role": {k: v.model_dump() for k, v in usage.by_role.items()},
                          "total": usage.total().model_dump()},
            })
            return "\n".join([f"{run.environment}: {len(items)} items", *score_lines(scores), *notes,
                              f"results: {run.out}"])

    with claim_run_folder(run.out, flag="--out", kind="eval"):
        _prepare_out(run.out, run.resume)
        check_inputs(run.out, inputs)
        with resumable(ctx):
            return run_resumable(main())


def _check_replay(folder: Path, items: Sequence[Item]) -> None:
    """The eval folder ``--off-policy`` names must hold every period of every user, before any call is made."""
    store = RunStore(folder / "run")
    if not store.root.is_dir():
        raise UserInputError("holds no eval run to replay (no run/ folder); give the --out folder of a finished "
                             "memevo eval", source=str(folder), field="--off-policy")
    for item in items:
        have = store.finished_periods(item.id)
        if have < len(item.periods):
            raise UserInputError(f"the recorded run has {have} of the {len(item.periods)} periods of user {item.id}; "
                                 "finish it first (memevo eval --resume on it)", source=str(folder),
                                 field="--off-policy")


def _agent(policy: MemoryPolicy, llm: ChatClient, prompts: AMemGymPrompts | None) -> MemoryAgent:
    """A fresh agent. AMemGym's own write prompt lacks memevo's output-format clause (a rule that keeps
    evolved prompts in format), so with ``--amemgym-source`` only the placeholders are checked."""
    if prompts is None:
        return build_agent(policy, llm)
    spec = agent_class(policy.kind).spec
    for name, text in policy.prompts.items():
        missing = [p for p in spec.component(name).required_placeholders if p not in placeholders_in(text)]
        if missing:
            raise UserInputError(f"prompt lacks placeholders {missing}", source=prompts.source, field=name)
    return agent_class(policy.kind)(policy, llm)


def _protocol_notes(compat: bool, amemgym_prompts: bool) -> list[str]:
    """What a reader of a compat run must know about whose agents were measured."""
    if not compat or amemgym_prompts:
        return []
    return ["AMemGym's protocol with memevo's own prompt wording (QA, probe, upper bound, agents, simulator); "
            "pass --amemgym-source PATH to an AMemGym checkout to use its prompt texts"]


def _headline(scores: Scores, out: Path, notes: Sequence[str] = ()) -> str:
    lines = [*score_lines(scores), f"results: {out}"]
    if scores.upper_bound_format_errors:
        lines.append(
            f"note: the memory score is computed against an upper bound with {scores.upper_bound_format_errors} "
            "unparsed replies (scored as wrong, or as a random pick under --amemgym-compat), which lowers the upper "
            f"bound and raises the memory score; see {UPPER_BOUND_FILE}"
        )
    lines += [f"note: {note}" for note in notes]
    return "\n".join(lines)
