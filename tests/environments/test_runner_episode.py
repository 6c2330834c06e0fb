"""The episode runner with scripted agents: protocol, scores, state freezing, store, resume, replay."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from memevo.agents.base import MemoryAgent
from memevo.core.errors import RunFailedError, UserInputError
from memevo.environments.amemgym.data.models import Item
from memevo.environments.metrics import UpperBoundEntry, UpperBoundTable, score_episodes
from memevo.environments.metrics.upper_bound import needed_states
from memevo.environments.records import EpisodeResult, PeriodResult
from memevo.environments.runner import (
    EpisodeConfig,
    launch_order,
    run_episode,
    run_episodes,
)
from memevo.environments.store import RunStore
from tests.doubles.scripted_agents import (
    AmnesiacAgent,
    CrashingAgent,
    KeywordMemoryAgent,
    OracleAgent,
    ScriptedSimulator,
    StateChangingAnswerAgent,
    UnreadableAgent,
    make_item,
)

CONFIG = EpisodeConfig(diagnose=True)


def perfect_upper_bound(items: list[Item]) -> UpperBoundTable:
    return UpperBoundTable(entries=[
        UpperBoundEntry(item_id=item.id, question_index=q, state=list(state), correct=True)
        for item in items for q, state in needed_states(item)
    ])


async def test_session_protocol_time_prefix_rounds_and_end_session() -> None:
    item = make_item(n_periods=3)
    agent, simulator = OracleAgent(item), ScriptedSimulator()
    episode = await run_episode(agent, item, simulator, EpisodeConfig(rounds_init=1, rounds_update=3))
    sessions = [s for p in item.periods for s in p.sessions]
    openings = [m for m, _ in agent.responded if m.startswith("[Current Time: ")]
    assert openings == [f"[Current Time: {s.session_time}]\n{s.query}" for s in sessions]
    assert agent.ended_sessions == [s.session_time for s in sessions]
    # period 0: 1 round, no follow-up; later periods: 3 rounds, 2 follow-ups per session, none after the last
    assert len(simulator.calls) == 2 * sum(len(p.sessions) for p in item.periods[1:])
    assert [c["n_messages"] for c in simulator.calls[:2]] == [2, 4]
    transcript = episode.periods[1].transcripts[0]
    assert [m["role"] for m in transcript] == ["user", "assistant"] * 3
    assert all(call["now"].endswith("23:59:59") for call in agent.answer_calls)
    assert {call["now"][:10] for call in agent.answer_calls} == {p.period_end for p in item.periods}


async def test_oracle_scores_like_a_perfect_upper_bound() -> None:
    items = [make_item(f"u{i}", n_periods=4) for i in range(3)]
    agents = iter(OracleAgent(items[index]) for index in launch_order(items, CONFIG))  # made as users start
    episodes = await run_episodes(lambda: next(agents), items, ScriptedSimulator(), CONFIG)
    scores = score_episodes(episodes, items, perfect_upper_bound(items))
    assert scores.accuracy == 1.0 and scores.upper_bound == 1.0 and scores.memory_score == 1.0
    assert scores.failure is not None and scores.failure.write == scores.failure.read == 0.0
    assert [e.user_id for e in episodes] == ["u0", "u1", "u2"]


async def test_users_start_longest_chain_first_and_come_back_in_item_order() -> None:
    """With one user at a time, the longest user runs first and the shortest last (list scheduling), whatever
    the order of the items; the episodes still come back in item order."""
    items = [make_item("short", n_periods=2), make_item("long", n_periods=4), make_item("mid", n_periods=3)]
    config = CONFIG.model_copy(update={"max_concurrent_users": 1})
    agents = iter(OracleAgent(items[index]) for index in launch_order(items, config))
    finished: list[str] = []
    episodes = await run_episodes(lambda: next(agents), items, ScriptedSimulator(), config,
                                  on_period=lambda result: finished.append(result.user_id))
    assert list(dict.fromkeys(finished)) == ["long", "mid", "short"]
    assert [episode.user_id for episode in episodes] == ["short", "long", "mid"]
    assert [len(episode.periods) for episode in episodes] == [2, 4, 3]


async def test_amnesiac_scores_near_random() -> None:
    items = [make_item(f"u{i}", n_periods=6) for i in range(25)]
    agents = iter(AmnesiacAgent(item) for item in items)
    episodes = await run_episodes(lambda: next(agents), items, ScriptedSimulator(), EpisodeConfig())
    scores = score_episodes(episodes, items, perfect_upper_bound(items))
    assert scores.n_questions == 25 * 6 * 4
    assert scores.random_baseline == pytest.approx(0.25)
    assert abs(scores.accuracy - 0.25) < 0.06
    assert abs(scores.memory_score) < 0.1


async def test_answering_questions_must_not_change_state() -> None:
    item = make_item()
    with pytest.raises(RunFailedError, match="changed its state"):
        await run_episode(StateChangingAnswerAgent(item), item, ScriptedSimulator(), EpisodeConfig())


def _strip_transient(episodes: list[EpisodeResult]) -> list[dict]:
    return [episode.model_dump(mode="json") for episode in episodes]


async def test_killed_run_resumes_to_identical_results(tmp_path: Path) -> None:
    items = [make_item(f"u{i}", n_periods=5) for i in range(3)]
    reference = await run_episodes(
        _factory(items, KeywordMemoryAgent, window=3), items, ScriptedSimulator(), CONFIG, RunStore(tmp_path / "a")
    )
    store = RunStore(tmp_path / "b")
    # u1 crashes on its 8th reply (inside period 2: 5 one-round sessions in period 0, 2 replies per later period)
    crashing = {"u1": lambda item: _CrashingKeyword(item, window=3, crash_at=8)}
    with pytest.raises(RuntimeError, match="simulated crash"):
        await run_episodes(_factory(items, KeywordMemoryAgent, window=3, overrides=crashing), items,
                           ScriptedSimulator(), CONFIG.model_copy(update={"max_concurrent_users": 1}), store)
    assert store.finished_periods("u0") == 5 and store.finished_periods("u1") == 2
    assert store.finished_periods("u2") == 0
    resumed_agents: dict[str, KeywordMemoryAgent] = {}
    resumed = await run_episodes(_factory(items, KeywordMemoryAgent, window=3, record=resumed_agents), items,
                                 ScriptedSimulator(), CONFIG, store)
    assert _strip_transient(resumed) == _strip_transient(reference)
    assert resumed_agents["u0"].responded == []  # nothing redone for a finished user
    years = {m[15:19] for m, _ in resumed_agents["u1"].responded if m.startswith("[Current Time: ")}
    assert years == {"2022", "2023", "2024"}  # u1 restarts at period 2, after its last finished period
    assert [store.load_episode(i.id) for i in items] == resumed


class _CrashingKeyword(KeywordMemoryAgent):
    def __init__(self, item: Item, window: int, crash_at: int) -> None:
        super().__init__(item, window=window)
        self.crash_at = crash_at

    async def respond(self, message, now):  # type: ignore[no-untyped-def]
        if len(self.responded) + 1 == self.crash_at:
            raise RuntimeError("simulated crash")
        return await super().respond(message, now)


def _factory(items, cls, *, overrides=None, record=None, **kwargs):  # type: ignore[no-untyped-def]
    """make_agent for run_episodes: hands out agents in item order (users with chains of equal length, as
    ``make_item`` gives, start in item order)."""
    queue = list(items)

    def make() -> MemoryAgent:
        item = queue.pop(0)
        agent = (overrides or {}).get(item.id, lambda it: cls(it, **kwargs))(item)
        if record is not None:
            record[item.id] = agent
        return agent

    return make


async def test_store_writes_each_period_atomically_and_refuses_another_policy(tmp_path: Path) -> None:
    item = make_item(n_periods=2)
    store = RunStore(tmp_path)
    seen: list[int] = []
    await run_episode(OracleAgent(item), item, ScriptedSimulator(), CONFIG, store=store,
                      on_period=lambda r: seen.append(r.period))
    folder = store.user_dir(item.id)
    assert sorted(p.name for p in folder.iterdir()) == [  # only the newest state is kept
        "meta.json", "period_00.json.gz", "period_01.json.gz", "period_01.state.json.gz"]
    assert seen == [0, 1]
    assert json.loads(gzip.decompress((folder / "period_01.state.json.gz").read_bytes()))["ended_sessions"]
    other = OracleAgent(item, policy=OracleAgent(item).policy.with_prompts(x="y"))
    with pytest.raises(UserInputError, match="policy_id"):
        await run_episode(other, item, ScriptedSimulator(), CONFIG, store=store)


async def test_crash_leaves_no_partial_period(tmp_path: Path) -> None:
    item = make_item(n_periods=3)
    store = RunStore(tmp_path)
    with pytest.raises(RuntimeError):
        await run_episode(CrashingAgent(item, crash_at=7), item, ScriptedSimulator(), CONFIG, store=store)
    assert store.finished_periods(item.id) == 1
    assert not list(store.user_dir(item.id).glob("*.tmp"))


async def test_after_period_hook_runs_before_the_state_is_saved(tmp_path: Path) -> None:
    item = make_item(n_periods=2)
    calls: list[int] = []

    async def hook(agent: MemoryAgent, result: PeriodResult) -> None:
        calls.append(result.period)
        agent.log.append(f"evolved after {result.period}")  # type: ignore[attr-defined]

    store = RunStore(tmp_path)
    await run_episode(OracleAgent(item), item, ScriptedSimulator(), CONFIG, store=store, after_period=hook)
    assert calls == [0, 1]
    assert store.load_state(item.id, 1)["log"][-1] == "evolved after 1"


async def test_off_policy_replay_feeds_recorded_transcripts(tmp_path: Path) -> None:
    items = [make_item(f"u{i}", n_periods=3) for i in range(2)]
    source = RunStore(tmp_path / "src")
    agents = iter(KeywordMemoryAgent(item) for item in items)
    on_policy = await run_episodes(lambda: next(agents), items, ScriptedSimulator(), CONFIG, source)
    replayers = {item.id: KeywordMemoryAgent(item) for item in items}
    queue = list(items)
    replayed = await run_episodes(lambda: replayers[queue.pop(0).id], items, source, CONFIG)
    assert all(agent.responded == [] for agent in replayers.values())
    for live, offline in zip(on_policy, replayed, strict=True):
        assert [p.transcripts for p in live.periods] == [p.transcripts for p in offline.periods]
        assert [[q.choice for q in p.qa] for p in live.periods] == [[q.choice for q in p.qa] for p in offline.periods]
    assert replayers["u0"].log == [m["content"] for p in on_policy[0].periods for t in p.transcripts
                                   for m in t if m["role"] == "user"]


async def test_replay_rejects_transcripts_of_the_wrong_shape() -> None:
    item = make_item(n_periods=2)
    episode = await run_episode(OracleAgent(item), item, ScriptedSimulator(), EpisodeConfig())
    with pytest.raises(UserInputError, match="rounds"):
        await run_episode(OracleAgent(item), item, episode, EpisodeConfig(rounds_update=3))
    with pytest.raises(UserInputError, match="finished periods"):
        await run_episode(OracleAgent(item), item, episode.model_copy(update={"periods": []}), EpisodeConfig())


async def test_duplicate_item_ids_are_refused() -> None:
    item = make_item()
    with pytest.raises(UserInputError, match="duplicate"):
        await run_episodes(lambda: OracleAgent(item), [item, item], ScriptedSimulator(), EpisodeConfig())


async def test_unreadable_answers_strict_and_compat() -> None:
    item = make_item(n_periods=3)
    agent = UnreadableAgent(item)
    strict = await run_episode(agent, item, ScriptedSimulator(), EpisodeConfig())
    records = [q for p in strict.periods for q in p.qa]
    assert all(q.format_error and q.choice is None and not q.correct and q.retry_reply for q in records)
    assert len(agent.answer_calls) == 2 * len(records)
    compat_config = EpisodeConfig(amemgym_compat=True, seed=7)
    runs = [await run_episode(UnreadableAgent(item), item, ScriptedSimulator(), compat_config) for _ in range(2)]
    assert runs[0] == runs[1]
    compat_records = [q for p in runs[0].periods for q in p.qa]
    assert all(q.random_fallback and q.format_error and q.choice is not None for q in compat_records)
    other_seed = await run_episode(UnreadableAgent(item), item, ScriptedSimulator(), EpisodeConfig(amemgym_compat=True))
    assert [q.choice for p in other_seed.periods for q in p.qa] != [q.choice for q in compat_records]


async def test_oracle_on_the_shared_amemgym_fixture() -> None:
    fixture = Path(__file__).parents[1] / "fixtures" / "amemgym_small.json"
    if not fixture.exists():
        pytest.skip("fixture not built yet")
    from memevo.environments.amemgym.data.io import load_items

    items = load_items(fixture)
    agents = iter(OracleAgent(items[index]) for index in launch_order(items, CONFIG))  # made as users start
    episodes = await run_episodes(lambda: next(agents), items, ScriptedSimulator(), CONFIG)
    scores = score_episodes(episodes, items, perfect_upper_bound(items))
    assert scores.accuracy == 1.0 and scores.memory_score == 1.0 and scores.failure.write == 0.0


async def test_resume_refuses_a_different_protocol(tmp_path: Path) -> None:
    item = make_item(n_periods=2)
    store = RunStore(tmp_path)
    await run_episode(OracleAgent(item), item, ScriptedSimulator(), EpisodeConfig(), store=store)
    with pytest.raises(UserInputError, match="protocol"):
        await run_episode(OracleAgent(item), item, ScriptedSimulator(), EpisodeConfig(diagnose=True), store=store)
    await run_episode(OracleAgent(item), item, ScriptedSimulator(), EpisodeConfig(max_concurrent_users=1), store=store)


async def test_each_period_records_the_memory_writes_it_made() -> None:
    from memevo.agents.awi import AWIAgent
    from memevo.agents.policy import MemoryPolicy
    from tests.doubles.scripted_agents import ScriptedSimulator, make_item
    from tests.doubles.scripted_llm import ScriptedLLM

    def handler(messages, role, wants_json):  # type: ignore[no-untyped-def]
        if '"answer"' in messages[-1]["content"]:
            return '{"answer": 1}'
        return "this is not json at all" if wants_json else "Noted."

    item = make_item(n_periods=3)
    agent = AWIAgent(MemoryPolicy(kind="awi", update_every=2, short_term=0), ScriptedLLM(handler))
    episode = await run_episode(agent, item, ScriptedSimulator(), EpisodeConfig())
    writes = [result.memory_writes for result in episode.periods]
    assert all(w is not None for w in writes)
    assert sum(w.requests for w in writes) == agent.counters.requests > 0  # type: ignore[union-attr]
    assert sum(w.failures for w in writes) == agent.counters.failures == agent.counters.requests
    assert score_episodes([episode], [item]).write_failure_rate == 1.0


async def test_consulted_memories_are_stored_once_per_period_and_referenced(tmp_path: Path) -> None:
    item = make_item(n_periods=2)
    store = RunStore(tmp_path)
    episode = await run_episode(KeywordMemoryAgent(item), item, ScriptedSimulator(), CONFIG, store=store)
    result = episode.periods[1]
    assert {record.memory_id for record in [*result.qa, *result.probes]} == set(result.memories)
    # a question and its probe consult the same beliefs: one stored text, two references
    assert [qa.memory_id for qa in result.qa] == [probe.memory_id for probe in result.probes]
    assert len(result.memories) <= len(result.qa)
    assert result.consulted_memory(result.qa[0]) == result.memories[result.qa[0].memory_id] != ""
    saved = json.loads(gzip.decompress((store.user_dir(item.id) / "period_01.json.gz").read_bytes()))
    assert all("consulted_memory" not in record for record in saved["qa"])
    assert store.load_period(item.id, 1) == result


async def test_episodes_without_traces_hold_only_what_scoring_needs(tmp_path: Path) -> None:
    """``traces=False`` (what ``memevo eval`` uses) returns periods without transcripts and consulted memories,
    also for periods restored on resume; the store keeps them whole and the scores are the same."""
    items = [make_item(f"u{i}", n_periods=3) for i in range(3)]
    whole = await run_episodes(lambda: KeywordMemoryAgent(items[0]), items, ScriptedSimulator(), CONFIG)
    store = RunStore(tmp_path)
    await run_episode(KeywordMemoryAgent(items[0]), items[0], ScriptedSimulator(), CONFIG, store=store)  # resumed below
    slim = await run_episodes(lambda: KeywordMemoryAgent(items[0]), items, ScriptedSimulator(), CONFIG, store,
                              traces=False)
    assert all(not p.transcripts and not p.memories and p.qa for e in slim for p in e.periods)
    assert [e.without_traces() for e in whole] == slim
    assert store.load_episode("u1").periods[2].memories and store.load_episode("u1").periods[2].transcripts
    table = perfect_upper_bound(items)
    assert score_episodes(slim, items, table) == score_episodes(whole, items, table)


def test_records_written_with_inline_memories_still_load() -> None:
    record = {"user_id": "u", "period": 0, "question_index": 0, "prompt": "p", "raw_reply": "r", "choice": 1,
              "gold": 1, "n_choices": 2, "correct": True, "consulted_memory": "user: I live in Oslo"}
    result = PeriodResult.model_validate({"user_id": "u", "period": 0, "qa": [record, {**record, "question_index": 1}]})
    assert len(result.memories) == 1
    assert [result.consulted_memory(r) for r in result.qa] == ["user: I live in Oslo"] * 2


async def test_a_run_folder_written_before_gzip_and_with_every_state_still_resumes(tmp_path: Path) -> None:
    item = make_item(n_periods=3)
    store = RunStore(tmp_path)
    with pytest.raises(RuntimeError):
        await run_episode(CrashingAgent(item, crash_at=7), item, ScriptedSimulator(), CONFIG, store=store)
    folder = store.user_dir(item.id)
    for packed in folder.glob("*.gz"):  # rewrite as the old layout: plain JSON files
        packed.with_suffix("").write_bytes(gzip.decompress(packed.read_bytes()))
        packed.unlink()
    assert store.finished_periods(item.id) == 1
    episode = await run_episode(OracleAgent(item), item, ScriptedSimulator(), CONFIG, store=store)
    assert [p.period for p in episode.periods] == [0, 1, 2]
    assert not (folder / "period_00.state.json").exists()  # the old state went once a newer one was saved
    assert store.load_episode(item.id) == episode


def test_a_period_file_holds_pydantics_own_json_of_the_record(tmp_path: Path) -> None:
    """Period results are serialized by orjson (~4 times faster than pydantic's serializer for a long native period):
    the file must hold the very bytes pydantic would have written, non-ASCII and control characters included."""
    from pydantic import TypeAdapter

    from memevo.environments.records import QARecord
    from memevo.environments.store import RunStore

    text = "ünï \"q\" \\ \n\t\x00\u2028 😀 " * 50
    record = QARecord(user_id="u/1", period=0, question_index=0, prompt=text, raw_reply='{"answer": 2}', choice=2,
                      gold=2, n_choices=3, correct=True, memory_id="abc")
    result = PeriodResult(user_id="u/1", period=0, transcripts=[[{"role": "user", "content": text}]], qa=[record],
                          memories={"abc": text})
    store = RunStore(tmp_path)
    store.save_period(result, {"history": [text]})
    written = gzip.decompress((store.user_dir("u/1") / "period_00.json.gz").read_bytes())
    assert written == TypeAdapter(PeriodResult).dump_json(result)
    assert store.load_period("u/1", 0) == result
