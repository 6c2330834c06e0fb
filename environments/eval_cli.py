"""``memevo eval``: score one agent config on an environment and write records, summary and plot.

Outputs under ``--out``: ``run/`` (per user/period results and agent states; ``--resume`` continues it),
``upper_bound.json``, ``questions.jsonl`` + ``questions.csv`` (one row per question asked),
``summary.json`` + ``summary.csv`` (overall and per-period scores, failure split, the upper bound's
unparsed replies), ``usage.csv`` (calls, tokens and dollars by role) and ``periods.png``.
"""

from __future__ import annotations

import asyncio
import csv
import importlib
import json
import threading
from collections.abc import Callable, Sequence
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel
from tqdm import tqdm

from memevo.agents.base import MemoryAgent
from memevo.agents.config_file import load_policy
from memevo.agents.errors import RunFailedError, UserInputError
from memevo.agents.llm.accounting import UsageReport
from memevo.agents.llm.config import CONCURRENCY_HELP
from memevo.agents.llm.protocol import ChatClient, LLMError
from memevo.agents.registry import build_agent
from memevo.environments.data.io import load_items
from memevo.environments.data.models import Item
from memevo.environments.metrics import (
    UPPER_BOUND_FILE,
    Scores,
    UpperBoundTable,
    UserScores,
    compute_upper_bound,
    random_baseline,
    score_episodes,
    user_scores,
)
from memevo.environments.metrics._items import item_lookup, item_of
from memevo.environments.records import EpisodeResult
from memevo.environments.runner import EpisodeConfig, run_episodes
from memevo.environments.simulators.base import UserSimulator
from memevo.environments.store import RunStore, write_json_atomic

QUESTION_COLUMNS = ("user_id", "period", "question_index", "choice", "gold", "n_choices", "correct", "format_error",
                    "random_fallback", "random_baseline", "upper_bound", "probe_correct")


class SimulatorKind(str, Enum):
    template = "template"
    llm = "llm"


class EvalOutcome(BaseModel):
    episodes: list[EpisodeResult]
    scores: Scores
    user_scores: list[UserScores]
    upper_bound: UpperBoundTable | None = None


def _question_rows(episodes: Sequence[EpisodeResult], items: Sequence[Item],
                   upper_bound: UpperBoundTable | None) -> list[dict[str, Any]]:
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
                    "probe_correct": None if probe is None else all(probe.correct.values()),
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
        failure = part.failure
        return {
            "scope": scope,
            **part.model_dump(exclude={"per_period", "failure"}),
            "write_failure": None if failure is None else failure.write,
            "read_failure": None if failure is None else failure.read,
            "utilization_failure": None if failure is None else failure.utilization,
        }

    return [row("overall", scores), *(row(f"period {p.period}", p) for p in scores.per_period)]


def write_outputs(out: Path, outcome: EvalOutcome, items: Sequence[Item], usage: UsageReport,
                  meta: dict[str, Any]) -> None:
    """Every file of an evaluation except the run store."""
    rows = _question_rows(outcome.episodes, items, outcome.upper_bound)
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
    from memevo.environments.plots import plot_periods  # matplotlib: only once there is something to plot

    plot_periods(outcome.scores, out / "periods.png", title=str(meta.get("agent", "")))


async def evaluate(
    make_agent: Callable[[], MemoryAgent],
    items: Sequence[Item],
    simulator: UserSimulator,
    config: EpisodeConfig,
    out: Path,
    *,
    upper_bound_llm: ChatClient | None = None,
    replay_from: Path | None = None,
    progress: bool = True,
) -> EvalOutcome:
    """Run (or resume) the episodes into ``out/run``, compute the upper bound if asked, and score."""
    upper_bound = None
    if upper_bound_llm is not None:
        upper_bound = await _upper_bound(upper_bound_llm, items, config, out / UPPER_BOUND_FILE, progress)
    total = sum(len(item.periods) for item in items)
    with tqdm(total=total, desc="periods", unit="period", disable=not progress) as bar:
        sessions = simulator if replay_from is None else RunStore(replay_from / "run")
        episodes = await run_episodes(make_agent, items, sessions, config, RunStore(out / "run"),
                                      on_period=lambda _: bar.update(1))
    return EvalOutcome(
        episodes=episodes,
        scores=score_episodes(episodes, items, upper_bound),
        user_scores=user_scores(episodes, items, upper_bound),
        upper_bound=upper_bound,
    )


async def _upper_bound(llm: ChatClient, items: Sequence[Item], config: EpisodeConfig, path: Path,
                       progress: bool) -> UpperBoundTable:
    """The stored table when it covers these items under the same decoding, else a fresh one (saved for
    the next resume)."""
    if path.exists():
        table = UpperBoundTable.model_validate_json(path.read_text(encoding="utf-8"))
        covered = {item.id for item in items} <= {entry.item_id for entry in table.entries}
        if covered and table.constrained == config.constrained_answers:
            return table
    with tqdm(desc="upper bound", unit="call", disable=not progress) as bar:
        table = await compute_upper_bound(llm, items, amemgym_compat=config.amemgym_compat,
                                          constrained=config.constrained_answers, seed=config.seed,
                                          on_entry=lambda _: bar.update(1))
    write_json_atomic(path, table.model_dump(mode="json"))
    return table


def _make_simulator(kind: SimulatorKind, llm: ChatClient, seed: int) -> UserSimulator:
    # Imported here: only the chosen simulator's module is needed.
    if kind is SimulatorKind.template:
        from memevo.environments.simulators.template import TemplateUserSimulator

        return TemplateUserSimulator(seed=seed)
    from memevo.environments.simulators.llm import LLMUserSimulator

    return LLMUserSimulator(llm, seed=seed)


def _prepare_out(out: Path, resume: bool) -> None:
    if (out / "run").exists() and not resume:
        raise UserInputError("already holds a run; pass --resume to continue it or choose a new folder",
                             source=str(out))
    if resume and not (out / "run").exists():
        raise UserInputError("nothing to resume (no run/ folder)", source=str(out), field="--resume")
    out.mkdir(parents=True, exist_ok=True)


def eval_command(
    agent: Annotated[Path, typer.Option("--agent", help="Agent config (memevo YAML/JSON or AMemGym agent JSON).")],
    env: Annotated[str, typer.Option("--env", help="data.json, dataset folder/file, or Hugging Face dataset id.")],
    out: Annotated[Path, typer.Option("--out", help="Output folder.")],
    upper_bound: Annotated[bool, typer.Option("--upper-bound",
                                              help="Compute the upper bound and memory score.")] = False,
    diagnose: Annotated[bool, typer.Option("--diagnose", help="Probe states for the write/read/util split.")] = False,
    resume: Annotated[bool, typer.Option("--resume", help="Continue the run in --out.")] = False,
    users: Annotated[int | None, typer.Option("--users", min=1, help="Only the first N users.")] = None,
    simulator: Annotated[SimulatorKind, typer.Option("--simulator", help="User simulator.")] = SimulatorKind.llm,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not use the LLM response cache.")] = False,
    amemgym_compat: Annotated[bool, typer.Option("--amemgym-compat", help="Random fallback on unreadable answers, "
                                                 "as the reference.")] = False,
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
) -> None:
    """Evaluate an agent on-policy (AMemGym protocol) and write records, summary and a per-period plot."""
    policy = load_policy(agent)
    items = load_items(env)[:users]
    config = EpisodeConfig(rounds_init=rounds_init, rounds_update=rounds_update, diagnose=diagnose,
                           amemgym_compat=amemgym_compat, constrained_answers=constrained_answers,
                           max_concurrent_users=max_concurrent_users or 1, seed=seed)
    policy.llm.concurrency(embedded=False, override=concurrency)  # a bad $MEMEVO_CONCURRENCY stops us here
    _prepare_out(out, resume)

    async def main() -> None:
        from memevo.agents.llm.hub import LLMHub  # the HTTP client stack loads only when a run starts

        # The plotting stack takes a second to import; do it while the run waits on the endpoint, not after.
        threading.Thread(target=importlib.import_module, args=("memevo.environments.plots",), daemon=True).start()
        async with LLMHub(use_cache=not no_cache, concurrency=concurrency) as hub:
            llm = hub.client(policy.llm)
            width = max_concurrent_users or llm.limit.limit  # users wait on the LLM, so as many as can be served
            run_config = config.model_copy(update={"max_concurrent_users": width})
            try:
                outcome = await evaluate(
                    lambda: build_agent(policy, llm), items, _make_simulator(simulator, llm, seed), run_config, out,
                    upper_bound_llm=llm if upper_bound else None, replay_from=off_policy,
                )
            except LLMError as error:
                raise RunFailedError(f"{error}; finished periods are saved, rerun with --resume") from error
            meta = {"agent": policy.kind, "policy_id": policy.policy_id, "model": policy.llm.model, "env": env,
                    "n_items": len(items), "config": run_config.model_dump()}
            write_outputs(out, outcome, items, hub.accounting.report(), meta)
            typer.echo(_headline(outcome.scores, out))

    asyncio.run(main())


def _headline(scores: Scores, out: Path) -> str:
    parts = [f"accuracy {scores.accuracy:.3f}", f"random {scores.random_baseline:.3f}"]
    if scores.upper_bound is not None:
        parts.append(f"upper bound {scores.upper_bound:.3f}")
    if scores.memory_score is not None:
        parts.append(f"memory score {scores.memory_score:.3f}")
    if scores.failure is not None:
        f = scores.failure
        parts.append(f"write/read/util {f.write:.3f}/{f.read:.3f}/{f.utilization:.3f}")
    parts.append(f"format errors {scores.format_error_rate:.1%}")
    if scores.upper_bound_format_error_rate is not None:
        parts.append(f"upper-bound format errors {scores.upper_bound_format_error_rate:.1%}")
    lines = [f"{', '.join(parts)}  ->  {out}"]
    if scores.upper_bound_format_errors:
        lines.append(
            f"note: the memory score is computed against an upper bound with {scores.upper_bound_format_errors} "
            "unparsed replies (scored as wrong, or as a random pick under --amemgym-compat), which lowers the upper "
            f"bound and raises the memory score; see {UPPER_BOUND_FILE}"
        )
    return "\n".join(lines)
