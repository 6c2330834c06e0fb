"""Cost of each benchmark environment per item and per question: LLM calls and prompt tokens by role (the
agent's and the judge's apart), and wall time, against the fake endpoint (tests/doubles/fault_server.py).

Each environment reads a small synthetic file in its real format (written here, in a temporary folder; sizes are
flags), replays every item into a fresh agent through memevo's gateway, asks the questions and scores them, the
judge through the same gateway under its ``judge`` role. The endpoint answers instantly (or after
``--latency-ms``) with a canned reply: "yes" to a judge's yes/no question, "3" to a rating, a short sentence to
everything else, so the calls and tokens are what the environments *send*; tokens are the fault server's word
counts. A second pass over the same data with a response cache shows the judge served from it.

    python benchmarks/environments.py [--kinds native,rag] [--latency-ms 0] [--items 3] [--questions 8]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.doubles when run as a script

from memevo.agents.llm.accounting import Accounting, RoleUsage  # noqa: E402
from memevo.agents.llm.cache import ResponseCache  # noqa: E402
from memevo.agents.llm.config import LLMConfig  # noqa: E402
from memevo.agents.llm.gateway import LLMGateway  # noqa: E402
from memevo.agents.policy import MemoryPolicy  # noqa: E402
from memevo.agents.registry import build_agent  # noqa: E402
from memevo.environments.registry import make_environment  # noqa: E402
from memevo.environments.runner import EpisodeConfig  # noqa: E402
from tests.doubles.fault_server import FaultServer  # noqa: E402

FILLER = "We talked about the weather, the garden and a film we both liked last week."


def canned_reply(body: dict[str, Any]) -> str:
    prompt = body["messages"][-1]["content"]
    if "yes or no" in prompt:
        return "yes"
    if "Reply with the number only" in prompt:
        return "3"
    return "I remember that you moved to Lisbon in May."


def write_locomo(folder: Path, items: int, questions: int) -> Path:
    samples = []
    for number in range(items):
        conversation: dict[str, Any] = {"speaker_a": "Ana", "speaker_b": "Ben"}
        for session in range(1, 6):
            conversation[f"session_{session}_date_time"] = f"1:56 pm on {session} May, 2023"
            conversation[f"session_{session}"] = [
                {"speaker": "Ana" if turn % 2 == 0 else "Ben", "dia_id": f"D{session}:{turn + 1}",
                 "text": f"{FILLER} ({number}.{session}.{turn})"} for turn in range(10)]
        qa = [{"question": f"What did Ana say in session {q % 5 + 1}?", "answer": "the weather",
               "evidence": [f"D{q % 5 + 1}:1"], "category": q % 4 + 1} for q in range(questions - 1)]
        qa.append({"question": "What is Ben's cat called?", "adversarial_answer": "Rex", "evidence": ["D1:1"],
                   "category": 5})
        samples.append({"sample_id": f"conv-{number}", "conversation": conversation, "qa": qa})
    path = folder / "locomo10.json"
    path.write_text(json.dumps(samples), encoding="utf-8")
    return path


def write_longmemeval(folder: Path, items: int, questions: int) -> Path:
    types = ["single-session-user", "multi-session", "temporal-reasoning", "knowledge-update"]
    records = []
    for number in range(items * questions):
        sessions = [[{"role": "user", "content": f"{FILLER} ({number}.{s}.{t})"},
                     {"role": "assistant", "content": "That sounds nice."}] for s in range(6) for t in range(1)]
        records.append({
            "question_id": f"q{number}" + ("_abs" if number % 5 == 4 else ""), "question_type": types[number % 4],
            "question": "Where did I move?", "answer": "Lisbon", "question_date": "2023/06/01 (Thu) 10:00",
            "haystack_session_ids": [f"s{number}.{s}" for s in range(6)],
            "haystack_dates": [f"2023/05/{s + 10:02d} (Sat) 09:00" for s in range(6)],
            "haystack_sessions": sessions, "answer_session_ids": [f"s{number}.0"]})
    path = folder / "longmemeval_s.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def write_memoryagentbench(folder: Path, items: int, questions: int) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    context = " ".join(f"Fact {n}: {FILLER}" for n in range(600))
    sources = ["factconsolidation_sh_6k", "longmemeval_s_-1_500", "ruler_qa1_197k"]
    rows = [{"context": context, "questions": [f"What is fact {q}?" for q in range(questions)],
             "answers": [[f"fact {q}"] for q in range(questions)],
             "metadata": {"source": sources[number % 3], "question_types": ["multi-session"] * questions,
                          "question_ids": [f"m{number}.{q}" for q in range(questions)]}} for number in range(items)]
    path = folder / "Accurate_Retrieval-00000-of-00001.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def write_memorybench(folder: Path, items: int, questions: int) -> Path:
    import datasets

    datasets.disable_progress_bars()

    def record(index: int, name: str) -> dict[str, Any]:
        dialog = [{"role": "user", "content": f"Question {index}: {FILLER}"}, {"role": "assistant", "content": "OK."},
                  {"role": "user", "content": "Please be more specific."}, {"role": "assistant", "content": "Sure."}]
        feedback = [{"round": 1, "implicit_action": "dislike", "terminated": False}]
        return {"test_idx": index, "input_prompt": f"Question {index}: why is the sky blue?", "dataset_name": name,
                "lang": "en", "info": json.dumps({"golden_answer": "scattering"}), "dialog": json.dumps(dialog),
                "implicit_feedback": json.dumps(feedback)}

    root = folder / "MemoryBench"
    for number in range(items):
        name = "NFCats" if number == 0 else f"DialSim-set{number}"
        splits = {"train": [record(i, name) for i in range(10)],
                  "test": [record(10 + i, name) for i in range(questions)]}
        for split, records in splits.items():
            datasets.Dataset.from_list(records).save_to_disk(str(root / "dataset" / name / split))
    return root


WRITERS = {"locomo": write_locomo, "longmemeval": write_longmemeval, "memoryagentbench": write_memoryagentbench,
           "memorybench": write_memorybench}


async def run(name: str, path: Path, kind: str, gateway: LLMGateway) -> tuple[int, int, float]:
    environment = make_environment(name, EpisodeConfig(), judge=gateway)
    items = environment.load_items(path)
    started = time.perf_counter()
    questions = 0
    for item in items:
        agent = build_agent(MemoryPolicy(kind=kind), gateway)
        episode = await environment.run_item(agent, item, None)
        questions += sum(len(period.qa) for period in episode.periods)
    return len(items), questions, time.perf_counter() - started


def row(name: str, kind: str, items: int, questions: int, wall: float, usage: dict[str, RoleUsage]) -> str:
    agent, judge = usage.get("agent", RoleUsage()), usage.get("judge", RoleUsage())
    hits = f"{judge.cache_hits}/{judge.calls}" if judge.calls else "n/a (no judge)"
    return (f"{name:<17} {kind:<12} {items:>5} {questions:>5}  {agent.calls / items:>8.1f} {agent.calls / questions:>7.2f}"
            f"  {agent.prompt_tokens / items:>10,.0f} {agent.prompt_tokens / questions:>9,.0f}"
            f"  {judge.calls / questions:>7.2f} {hits:>14}  {wall / items * 1000:>8.0f} "
            f"{wall / questions * 1000:>7.1f}")


async def main(kinds: list[str], latency_s: float, items: int, questions: int) -> None:
    header = (f"{'environment':<17} {'agent':<12} {'items':>5} {'qs':>5}  {'calls/it':>8} {'calls/q':>7}"
              f"  {'tokens/it':>10} {'tokens/q':>9}  {'judge/q':>7} {'judge hits':>14}  {'ms/item':>8} {'ms/q':>7}")
    print(f"agent and judge columns are the 'agent' and 'judge' roles' own calls; latency {latency_s * 1000:.0f} ms")
    print(header)
    with FaultServer(canned_reply, latency_s=latency_s) as server, tempfile.TemporaryDirectory() as folder:
        for name, writer in WRITERS.items():
            path = writer(Path(folder), items, questions)
            for kind in kinds:
                for cached in (False, True):
                    accounting = Accounting()
                    cache = ResponseCache(Path(folder) / f"cache-{name}-{kind}") if cached else None
                    gateway = LLMGateway(LLMConfig(model="fault-server", max_concurrency=4, max_retries=0),
                                         base_url=server.url, cache=cache, accounting=accounting)
                    if cached:  # fill the cache, then measure the pass it serves
                        await run(name, path, kind, gateway)
                        accounting = Accounting()
                        gateway.accounting = accounting
                    counts = await run(name, path, kind, gateway)
                    await gateway.aclose()
                    label = f"{kind}+cache" if cached else kind
                    print(row(name, label, *counts, accounting.report().by_role))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kinds", default="native,rag", help="agent kinds, comma-separated")
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--items", type=int, default=3, help="items per environment")
    parser.add_argument("--questions", type=int, default=8, help="questions per item")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.kinds.split(","), arguments.latency_ms / 1000, arguments.items, arguments.questions))
