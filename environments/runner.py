"""The episode runner: drives a memory agent through an item period by period (AMemGym D.1).

Per period: every session in order (opening message ``"[Current Time: <session_time>]\\n" + query``,
then user-simulator follow-ups between rounds, none after the last), ``end_session`` after each session
(the reference gave no such signal; I.13), then every question against the frozen state, concurrently,
with the period's end as ``now``. Off-policy replay (D.3) feeds a recorded run's transcripts through
``ingest`` instead: pass the recorded run where a simulator would go. Users run concurrently up to a
bound; each finished period is saved to the store at once, so a killed run resumes where it stopped. The save
(two files written and synced, ~10 ms) runs on a worker thread while the user's next period starts: waiting for
it put that time on every user's chain of calls. Periods reach the disk in order, and an episode ends, or fails,
only once its finished periods are on disk; a kill meanwhile loses at most the period just finished.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, time
from typing import Any, TypeVar

from pydantic import ConfigDict, Field, model_validator

from memevo.agents.base import MemoryAgent
from memevo.agents.buffered import BufferedMemoryAgent, WriteCounters
from memevo.agents.llm.protocol import Message
from memevo.agents.llm.urgency import Chain, chain_remaining, current_chain
from memevo.core.errors import RunFailedError, UserInputError
from memevo.core.lazy_model import LazyModel
from memevo.environments.amemgym.data.models import Item, Session
from memevo.environments.amemgym.data.times import parse_time
from memevo.environments.amemgym.simulators.base import UserSimulator, opening_message
from memevo.environments.answering import (
    AgentResponder,
    AnswerModeSetting,
    answer_chooser,
    check_answer_mode,
    resolve_answer_mode,
)
from memevo.environments.diagnosis import run_probe
from memevo.environments.item_run import AfterPeriod, OnPeriod
from memevo.environments.qa import QuestionPrompts
from memevo.environments.records import EpisodeResult, PeriodResult, QARecord, remember
from memevo.environments.store import RunStore

Transcript = list[Message]
SessionSource = UserSimulator | EpisodeResult | RunStore
"""Where a period's sessions come from: a simulator plays them live (on-policy); a recorded episode, or
the run folder holding one per user, replays their transcripts (off-policy, D.3)."""

T = TypeVar("T")
R = TypeVar("R")


class EpisodeConfig(LazyModel):
    """How episodes are run; the defaults are AMemGym v1.base's."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rounds_init: int = Field(1, ge=1, description="Rounds per session in period 0.")
    rounds_update: int = Field(2, ge=1, description="Rounds per session in later periods.")
    diagnose: bool = Field(False, description="Run the state probe for every question at every period.")
    amemgym_compat: bool = Field(False, description="AMemGym's protocol: random fallback on unreadable answers, "
                                 "no probe retry (and free decoding unless constrained_answers is set).")
    max_concurrent_users: int = Field(4, ge=1)
    seed: int = Field(0, description="Seeds the compat random fallback.")
    check_frozen_state: bool = Field(True, description="Fail if answering questions changed the agent state.")
    constrained_answers: bool = Field(
        True,
        description="Ask answers and probes with their JSON schema, so the model can only emit a valid reply "
        "(small local models rarely follow the format otherwise). AMemGym decoded freely (no JSON mode), so an "
        "unset or None value resolves to `not amemgym_compat`; an explicit value wins.",
    )

    question_prompts: QuestionPrompts | None = Field(
        None, description="Evaluation prompt templates read from an AMemGym checkout; None: memevo's wording.")
    answer_mode: AnswerModeSetting = Field(
        "auto", description="How questions are answered: 'generated' (the model names an option), 'likelihood' "
        "(each option's text scored as the reply; the embedded model only) or 'auto' (likelihood where the model "
        "can score options and not amemgym_compat, else generated).")

    @model_validator(mode="before")
    @classmethod
    def _resolve_constrained_answers(cls, data: Any) -> Any:
        """An unset ``constrained_answers`` follows ``amemgym_compat``; an explicit value wins."""
        if isinstance(data, dict) and data.get("constrained_answers") is None:
            return {**data, "constrained_answers": not data.get("amemgym_compat", False)}
        return data

    def protocol(self) -> dict[str, object]:
        """The settings that change results; a resumed run must use the same ones (``question_prompts`` and
        ``answer_mode`` only when set, so runs recorded before they existed still resume)."""
        unset = {"question_prompts"} if self.question_prompts is None else set()
        unset |= {"answer_mode"} if self.answer_mode == "auto" else set()
        return self.model_dump(exclude={"max_concurrent_users", "check_frozen_state", *unset})

    def rounds(self, period: int) -> int:
        return self.rounds_init if period == 0 else self.rounds_update


def _parse_time(text: str, fmt: str, where: str) -> datetime:
    parsed = parse_time(text, fmt)
    if parsed is None:
        raise UserInputError(f"bad time {text!r} (expected {fmt})", field=where)
    return parsed


def session_time(item: Item, period: int, session: Session) -> datetime:
    """The simulated time of a session."""
    return _parse_time(session.session_time, "%Y-%m-%d %H:%M:%S", f"{item.id}.periods[{period}].session_time")


def period_end_time(item: Item, period: int) -> datetime:
    """The end of a period's last day: questions are asked then, after every session of the period."""
    day = _parse_time(item.periods[period].period_end, "%Y-%m-%d", f"{item.id}.periods[{period}].period_end")
    return datetime.combine(day.date(), time(23, 59, 59))


def _gold(item: Item, period: int, question_index: int) -> int:
    try:
        return item.qas[question_index].gold_index(item.periods[period].state) + 1
    except (KeyError, ValueError) as error:
        raise UserInputError(
            f"no gold answer: {error}", field=f"{item.id}.qas[{question_index}] at periods[{period}]"
        ) from error


async def ask_questions(
    agent: MemoryAgent, item: Item, period: int, config: EpisodeConfig, user_id: str, memories: dict[str, str]
) -> list[QARecord]:
    """Every question of the item at the end of ``period``, concurrently against the frozen state; the memories
    they consulted go into ``memories`` (see ``records.remember``)."""
    now = period_end_time(item, period)
    mode = resolve_answer_mode(config.answer_mode, agent.llm, amemgym_compat=config.amemgym_compat)
    chooser = answer_chooser(mode, constrained=config.constrained_answers)

    async def one(index: int) -> QARecord:
        question = item.qas[index]
        gold = _gold(item, period, index)
        prompt = chooser.qa_prompt(question, config.question_prompts)
        outcome = await chooser.choose(AgentResponder(agent, query=question.query, now=now), prompt, question,
                                       amemgym_compat=config.amemgym_compat,
                                       rng_key=(config.seed, user_id, period, index))
        return QARecord(
            user_id=user_id,
            period=period,
            question_index=index,
            prompt=prompt,
            correct=outcome.choice == gold,
            gold=gold,
            n_choices=len(question.answer_choices),
            memory_id=remember(memories, outcome.consulted_memory),
            **outcome.model_dump(exclude={"consulted_memory"}),
        )

    return list(await asyncio.gather(*(one(index) for index in range(len(item.qas)))))


async def play_on_policy(agent: MemoryAgent, item: Item, period: int, simulator: UserSimulator,
                         config: EpisodeConfig) -> list[Transcript]:
    """Run the period's sessions in order as live conversations."""
    chain = current_chain()
    transcripts = []
    for session in item.periods[period].sessions:
        now = session_time(item, period, session)
        messages: Transcript = []
        for round_index in range(config.rounds(period)):
            if round_index == 0:
                user_message = opening_message(session)
            else:
                user_message = await simulator.follow_up(item, period, session, list(messages), now)
            messages.append({"role": "user", "content": user_message})
            messages.append({"role": "assistant", "content": await agent.respond(user_message, now)})
            chain.advance()
        await agent.end_session(now)
        transcripts.append(messages)
    return transcripts


def _check_transcripts(item: Item, period: int, transcripts: list[Transcript], config: EpisodeConfig) -> None:
    where = f"{item.id}.periods[{period}].transcripts"
    sessions = item.periods[period].sessions
    if len(transcripts) != len(sessions):
        raise UserInputError(f"{len(transcripts)} recorded sessions, the item has {len(sessions)}", field=where)
    for index, messages in enumerate(transcripts):
        roles = [message.get("role") for message in messages]
        if roles != ["user", "assistant"] * config.rounds(period):
            raise UserInputError(
                f"session {index}: expected {config.rounds(period)} user/assistant rounds, got roles {roles}",
                field=where,
            )


async def replay_recorded(agent: MemoryAgent, item: Item, period: int, transcripts: list[Transcript],
                          config: EpisodeConfig) -> list[Transcript]:
    """Feed recorded sessions to the agent through ``ingest`` (off-policy; no ``respond`` calls)."""
    _check_transcripts(item, period, transcripts, config)
    for session, messages in zip(item.periods[period].sessions, transcripts, strict=True):
        now = session_time(item, period, session)
        for user_message, assistant_message in zip(messages[::2], messages[1::2], strict=True):
            await agent.ingest(user_message["content"], assistant_message["content"], now)
        await agent.end_session(now)
    return transcripts


def _restore(agent: MemoryAgent, item_id: str, n_periods: int, protocol: dict[str, object], store: RunStore,
             user_id: str) -> list[PeriodResult]:
    """The finished periods in the store; the agent gets the state saved after the last of them."""
    store.bind(user_id, policy_id=agent.policy.policy_id, item_id=item_id, protocol=protocol)
    done = min(store.finished_periods(user_id), n_periods)
    if done:
        agent.load_state(store.load_state(user_id, done - 1))
    return [store.load_period(user_id, period) for period in range(done)]


def _write_counters(agent: MemoryAgent) -> WriteCounters | None:
    return agent.counters.model_copy() if isinstance(agent, BufferedMemoryAgent) else None


def _writes_since(before: WriteCounters | None, after: WriteCounters | None) -> WriteCounters | None:
    """The write requests, retries and failures between two snapshots of an agent's counters."""
    if before is None or after is None:
        return None
    return WriteCounters(requests=after.requests - before.requests, retries=after.retries - before.retries,
                         failures=after.failures - before.failures)


async def _examine(agent: MemoryAgent, item: Item, period: int, config: EpisodeConfig, user_id: str,
                   transcripts: list[Transcript]) -> PeriodResult:
    """Questions (and probes) at the end of a period, checking that they left the state untouched."""
    frozen = agent.state() if config.check_frozen_state else None
    memories: dict[str, str] = {}
    qa = await ask_questions(agent, item, period, config, user_id, memories)
    probes = []
    if config.diagnose:
        now = period_end_time(item, period)
        probes = list(await asyncio.gather(*(
            run_probe(agent, item, period, index, user_id=user_id, now=now, constrained=config.constrained_answers,
                      amemgym_compat=config.amemgym_compat, prompts=config.question_prompts, memories=memories)
            for index in range(len(item.qas))
        )))
    if frozen is not None and agent.state() != frozen:
        raise RunFailedError(
            f"agent kind '{agent.policy.kind}' changed its state while answering questions "
            f"(user {user_id}, period {period}); answer() must not change state"
        )
    return PeriodResult(user_id=user_id, period=period, transcripts=transcripts, qa=qa, probes=probes,
                        memories=memories)


Play = Callable[[int], Awaitable[list[Transcript]]]
"""Plays one period's sessions (live or replayed) and returns their transcripts."""
Examine = Callable[[int, list[Transcript]], Awaitable[PeriodResult]]
"""Asks one period's questions against the frozen state and returns the period's result."""


class PeriodPlan(LazyModel):
    """What ``run_periods`` needs to know of an item, whatever the environment: its id and periods, the settings a
    resumed run must share (``protocol``), and the calls each period makes in order (for the urgency chain)."""

    model_config = ConfigDict(frozen=True)

    item_id: str
    n_periods: int
    protocol: dict[str, object]
    calls_per_period: list[int]


async def run_periods(
    agent: MemoryAgent,
    plan: PeriodPlan,
    play: Play,
    examine: Examine,
    *,
    store: RunStore | None,
    user_id: str,
    after_period: AfterPeriod | None,
    on_period: OnPeriod | None,
    traces: bool,
) -> EpisodeResult:
    """The periods of one item in order, each played, examined, handed to ``after_period`` and saved; with a store,
    finished periods are restored and skipped (any environment's episode goes through here)."""
    policy_id = agent.policy.policy_id
    periods = _restore(agent, plan.item_id, plan.n_periods, plan.protocol, store, user_id) if store is not None else []
    for result in periods:
        if on_period:
            on_period(result)
    if not traces:
        periods = [result.without_traces() for result in periods]
    saving: asyncio.Future[None] | None = None  # the last finished period's save, still being written
    with chain_remaining(Chain(sum(plan.calls_per_period[len(periods):]))) as chain:
        try:
            for period in range(len(periods), plan.n_periods):
                writes_before = _write_counters(agent)
                transcripts = await play(period)
                result = await examine(period, transcripts)
                chain.advance()
                result.memory_writes = _writes_since(writes_before, _write_counters(agent))
                if after_period:
                    await after_period(agent, result)
                if store is not None:
                    state = agent.state()  # taken now: the next period changes the agent while this one is written
                    if saving is not None:
                        await saving  # periods reach the disk in order
                    saving = asyncio.ensure_future(store.save_period_async(result, state))
                periods.append(result if traces else result.without_traces())
                if on_period:
                    on_period(result)
        finally:
            if saving is not None:  # the episode ends (or fails) only once its finished periods are on disk
                await asyncio.shield(saving)
    return EpisodeResult(user_id=user_id, policy_id=policy_id, periods=periods)


def period_plan(item: Item, config: EpisodeConfig) -> PeriodPlan:
    """An AMemGym item's plan: one call per conversation round, one for each period's questions (asked at once)."""
    return PeriodPlan(item_id=item.id, n_periods=len(item.periods), protocol=config.protocol(),
                      calls_per_period=[len(item.periods[period].sessions) * config.rounds(period) + 1
                                        for period in range(len(item.periods))])


def _recorded(source: EpisodeResult | RunStore, item: Item, user_id: str) -> EpisodeResult:
    """The recorded episode to replay for ``user_id``; it must cover every period of the item."""
    episode = source.load_episode(user_id) if isinstance(source, RunStore) else source
    if episode is not None and episode.user_id != user_id:
        raise UserInputError(f"recorded run is for user {episode.user_id}, not {user_id}", field="sessions")
    if episode is None or len(episode.periods) < len(item.periods):
        have = 0 if episode is None else len(episode.periods)
        raise UserInputError(
            f"recorded run has {have} finished periods for user {user_id}, the item has {len(item.periods)}",
            field="sessions",
        )
    return episode


async def run_episode(
    agent: MemoryAgent,
    item: Item,
    sessions: SessionSource,
    config: EpisodeConfig,
    *,
    store: RunStore | None = None,
    user_id: str | None = None,
    after_period: AfterPeriod | None = None,
    on_period: OnPeriod | None = None,
    traces: bool = True,
) -> EpisodeResult:
    """One agent through one item, live with a simulator or replayed from a recorded run (``SessionSource``);
    with a store, finished periods are skipped and restored. ``traces=False`` returns the periods
    ``without_traces`` (the callbacks still get them whole), so a caller that only scores holds little per user."""
    user_id = user_id or item.id
    check_answer_mode(config.answer_mode, agent.llm)
    if isinstance(sessions, UserSimulator):
        simulator = sessions

        async def play(period: int) -> list[Transcript]:
            return await play_on_policy(agent, item, period, simulator, config)
    else:
        recorded = _recorded(sessions, item, user_id)

        async def play(period: int) -> list[Transcript]:
            return await replay_recorded(agent, item, period, recorded.periods[period].transcripts, config)

    async def examine(period: int, transcripts: list[Transcript]) -> PeriodResult:
        return await _examine(agent, item, period, config, user_id, transcripts)

    return await run_periods(agent, period_plan(item, config), play, examine, store=store, user_id=user_id,
                             after_period=after_period, on_period=on_period, traces=traces)


def _chain_length(item: Item, config: EpisodeConfig) -> int:
    """The calls a user makes in order, as far as the data tells: one per conversation round and one per period's
    questions (asked at once). An agent's own extra calls (memory writes) are not known here; the estimate only
    orders users."""
    return sum(period_plan(item, config).calls_per_period)


async def bounded_gather(values: Sequence[T], work: Callable[[T], Awaitable[R]], limit: int) -> list[R]:
    """``work`` over ``values`` with at most ``limit`` running; the first failure cancels the rest."""
    semaphore = asyncio.Semaphore(limit)

    async def guarded(value: T) -> R:
        async with semaphore:
            return await work(value)

    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(guarded(value)) for value in values]
    except ExceptionGroup as errors:
        raise errors.exceptions[0] from None
    return [task.result() for task in tasks]


def launch_order(items: Sequence[Item], config: EpisodeConfig) -> list[int]:
    """The indexes of ``items`` in the order their users start: longest chain first, ties in item order (list
    scheduling's rule: with more users than the width, a long user started last would end the run alone; with all
    users at once, the longest chain's first request leaves first)."""
    return sorted(range(len(items)), key=lambda index: -_chain_length(items[index], config))


async def run_episodes(
    make_agent: Callable[[], MemoryAgent],
    items: Sequence[Item],
    sessions: UserSimulator | RunStore,
    config: EpisodeConfig,
    store: RunStore | None = None,
    *,
    after_period: AfterPeriod | None = None,
    on_period: OnPeriod | None = None,
    traces: bool = True,
) -> list[EpisodeResult]:
    """A fresh agent per item (``make_agent`` is called as each user starts, in ``launch_order``), live or replayed
    from a recorded run's folder; resumable per period through ``store``. Users run concurrently up to the bound;
    results come back in ``items`` order (``traces`` as in ``run_episode``)."""
    seen: set[str] = set()
    for item in items:
        if item.id in seen:
            raise UserInputError(f"duplicate item id {item.id!r}", field="id")
        seen.add(item.id)
    order = launch_order(items, config)
    episodes = await bounded_gather([items[index] for index in order], lambda item: run_episode(
        make_agent(), item, sessions, config, store=store, after_period=after_period, on_period=on_period,
        traces=traces,
    ), config.max_concurrent_users)
    by_index = dict(zip(order, episodes, strict=True))
    return [by_index[index] for index in range(len(items))]
