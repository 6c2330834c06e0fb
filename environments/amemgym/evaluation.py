"""The evaluation of an environment played live with a user simulator (AMemGym): ``evaluate_live`` for
``environments.evaluate``, and the outputs it writes.

Outputs under ``out``: ``run/`` (per user/period results and agent states; a resume continues it),
``upper_bound.json``, ``no_memory.json``, ``questions.jsonl`` + ``questions.csv`` (one row per question asked),
``summary.json`` + ``summary.csv`` (overall and per-period scores, failure split, the upper bound's
unparsed replies), ``usage.csv`` (calls, tokens and dollars by role) and ``periods.png``; the run-folder
guards of ``rundir`` add ``.lock``, ``inputs.json`` (what a resume must match) and ``usage.jsonl`` (every
call of every process, so usage survives kills).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from memevo.agents.base import MemoryAgent
from memevo.agents.llm.accounting import UsageReport
from memevo.agents.llm.protocol import ChatClient
from memevo.agents.policy import MemoryPolicy
from memevo.agents.registry import agent_class, build_agent
from memevo.agents.templates import placeholders_in
from memevo.core.atomic_files import write_json_atomic
from memevo.core.errors import UserInputError
from memevo.core.lazy_model import LazyModel
from memevo.core.setting_names import setting
from memevo.environments.amemgym.data.models import Item
from memevo.environments.amemgym.environment import AMemGymEnvironment
from memevo.environments.amemgym.prompts import AMemGymPrompts, load_amemgym_prompts
from memevo.environments.amemgym.simulators.base import UserSimulator
from memevo.environments.amemgym.simulators.factory import make_simulator
from memevo.environments.eval_run import EvalReport, EvalRequest, prepare_out, usage_summary
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
from memevo.environments.question_table import write_csv
from memevo.environments.records import EpisodeResult
from memevo.environments.registry import make_environment
from memevo.environments.resume import resumable_as, run_resumable
from memevo.environments.rundir import LEDGER_FILE, UsageLedger, check_inputs, claim_run_folder, item_fingerprints
from memevo.environments.runner import EpisodeConfig
from memevo.environments.score_text import score_lines
from memevo.environments.store import RunStore
from memevo.environments.table_cache import cached_table

QUESTION_COLUMNS = ("user_id", "period", "question_index", "choice", "gold", "n_choices", "correct", "format_error",
                    "random_fallback", "random_baseline", "upper_bound", "no_memory_correct", "probe_correct",
                    "probe_unread")


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
    write_csv(out / "questions.csv", QUESTION_COLUMNS, rows)
    write_json_atomic(out / "summary.json", {
        **meta,
        "scores": outcome.scores.model_dump(mode="json"),
        "user_scores": [u.model_dump(mode="json") for u in outcome.user_scores],
        "usage": usage_summary(usage),
    })
    summary = _summary_rows(outcome.scores)
    write_csv(out / "summary.csv", list(summary[0]), summary)
    usage_rows = [{"role": role, **u.model_dump()} for role, u in {**usage.by_role, "total": usage.total()}.items()]
    write_csv(out / "usage.csv", ["role", *usage.total().model_dump()], usage_rows)


def plot_title(agent: str, env: str) -> str:
    """The per-period plot's title, known from the start of a run (the plot process prepares the figure with it)."""
    return f"{agent} on {env}: scores per period"


async def play_and_score(
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
            run_items(AMemGymEnvironment(config), make_agent, items, sessions, RunStore(out / "run"),
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
    calls = sum(len(needed_states(item, every_choice=config.amemgym_compat)) for item in items)
    with phase("upper bound", calls, "call", enabled=progress) as bar:
        return await cached_table(UpperBoundTable, llm, items, path, config, on_entry=lambda _: bar.advance())


async def _no_memory(llm: ChatClient, items: Sequence[Item], config: EpisodeConfig, path: Path,
                     progress: bool) -> NoMemoryTable:
    with phase("no-memory baseline", sum(len(item.qas) for item in items), "call", enabled=progress) as bar:
        return await cached_table(NoMemoryTable, llm, items, path, config, on_entry=lambda _: bar.advance())


def evaluate_live(request: EvalRequest, resume_hint: str) -> EvalReport:
    """Play the items live (or replay a recorded run's transcripts, ``off_policy``), compute the tables asked for,
    score, and write every output; resumable per period."""
    policy = request.policy
    compat = request.amemgym_compat or policy.amemgym_compat
    policy = policy.model_copy(update={"amemgym_compat": compat})
    prompts = None if request.amemgym_source is None else load_amemgym_prompts(request.amemgym_source)
    if prompts is not None:
        policy = prompts.apply_to(policy)
    reader = make_environment(request.environment, EpisodeConfig(), field=setting("environment"),
                              options=request.options)
    items: list[Item] = reader.prepared(reader.load_items(request.data, limit=request.users), source=request.data)
    if request.off_policy is not None:
        _check_replay(request.off_policy, items)
    config = EpisodeConfig(rounds_init=request.rounds_init, rounds_update=request.rounds_update,
                           diagnose=request.diagnose, amemgym_compat=compat,
                           constrained_answers=request.constrained_answers,
                           max_concurrent_users=request.max_concurrent_users or 1, seed=request.seed,
                           question_prompts=None if prompts is None else prompts.questions)
    policy.llm.concurrency(embedded=False, override=request.concurrency)  # a bad $MEMEVO_CONCURRENCY stops us here
    live_simulator = request.simulator == "llm"
    simulator_llm = policy.llm if request.simulator_model is None else policy.llm.model_copy(
        update={"model": request.simulator_model})
    inputs = {"data": item_fingerprints(items), "policy": json.loads(policy.canonical_json()),
              "episode": config.protocol(), "simulator": request.simulator,
              "simulator_llm": simulator_llm.model_dump(mode="json") if live_simulator else None,
              "off_policy": None if request.off_policy is None else str(request.off_policy.resolve())}
    out = request.out
    configure_terminal()

    async def main(plot: PlotProcess) -> EvalReport:
        from memevo.agents.llm.hub import LLMHub  # the HTTP client stack loads only when a run starts

        async with LLMHub(use_cache=request.use_cache, concurrency=request.concurrency,
                          accounting=UsageLedger(out / LEDGER_FILE)) as hub:
            llm = hub.client(policy.llm)
            width = request.max_concurrent_users or llm.width  # users wait on the LLM, so as many as can be served
            run_config = config.model_copy(update={"max_concurrent_users": width})
            simulate = make_simulator(request.simulator, request.seed, hub.client(simulator_llm),
                                      amemgym_compat=compat, template=None if prompts is None else prompts.simulator)
            outcome = await play_and_score(
                lambda: _agent(policy, llm, prompts), items, simulate, run_config, out,
                upper_bound_llm=llm if request.upper_bound else None,
                no_memory_llm=llm if request.no_memory_baseline else None,
                min_probe_coverage=request.min_probe_coverage, replay_from=request.off_policy,
            )
            meta = {"agent": policy.kind, "policy_id": policy.policy_id, "model": policy.llm.model,
                    "env": request.data, "simulator_model": simulator_llm.model if live_simulator else None,
                    "prompts": "memevo" if prompts is None else f"amemgym:{request.amemgym_source}",
                    "n_items": len(items), "config": run_config.model_dump()}
            usage = hub.accounting.report()
            write_outputs(out, outcome, items, usage, meta, plot)
            notes = _protocol_notes(compat, prompts is not None)
            notes += [] if prompts is None else prompts.notes(policy.kind)
            return EvalReport(headline=_headline(outcome.scores, out, notes), scores=outcome.scores,
                              user_scores=outcome.user_scores, usage=usage)

    with claim_run_folder(out, field="out", kind="eval"):
        prepare_out(out, request.resume)
        check_inputs(out, inputs)
        # from here on a failure or a signal prints the resume command; the plotting stack is imported on another
        # core while the run goes on
        # (a rerun's figure is usually drawn already: its child starts only if the scores changed)
        with resumable_as(resume_hint), PlotProcess(start=not (out / PLOT_FILE).exists()) as plot:
            plot.prepare(max(len(item.periods) for item in items), request.upper_bound,
                         plot_title(policy.kind, request.data))
            report = run_resumable(main(plot))
            plot.wait()  # drawn while the other files were written and the LLM hub closed
    return report
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
