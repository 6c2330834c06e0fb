"""LLM calls and prompt tokens per period for each agent kind, driven by a scripted LLM double.

Usage: ``python benchmarks/agents.py [--periods 6] [--sessions 3] [--rounds 2]``

A synthetic user changes one of ``VARIABLES`` facts per session (like AMemGym's state updates) and
chats with filler text; after every period three questions are asked. No real model runs: the
``ScriptedBenchmarkLLM`` DOUBLE answers chats with a fixed sentence and writes with replies derived
from the prompt, so the table shows what each agent *sends* as history grows. Native's prompts
grow without bound; AWI's are bounded by the number of facts, RAG's and AWE's by ``top_k``.
Tokens are approximated as characters / 4.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from datetime import datetime, timedelta
from typing import Any

from memevo.agents.llm.protocol import ChatReply, Message, Role
from memevo.agents.policy import MemoryPolicy
from memevo.agents.registry import build_agent

VARIABLES = 8
FILLER = "I was also wondering about weekend plans, the weather and a book I am reading. " * 3
REPLY = "Thanks for sharing! Here are a few thoughts that might help you with that, step by step."
_FACT = re.compile(r"var(\d+) is now (\w+)")


class ScriptedBenchmarkLLM:
    """BENCHMARK DOUBLE implementing ``ChatClient``: deterministic replies, counts calls and prompt tokens."""

    def __init__(self) -> None:
        self.calls = 0
        self.prompt_tokens = 0

    async def chat(self, messages: list[Message], *, role: Role, json_schema: dict[str, Any] | None = None, **_: Any) -> ChatReply:
        self.calls += 1
        tokens = sum(len(m["content"]) for m in messages) // 4
        self.prompt_tokens += tokens
        text = self._json(messages[-1]["content"], json_schema) if json_schema is not None else REPLY
        return ChatReply(text=text, model="benchmark-double", prompt_tokens=tokens)

    async def chat_json(self, messages: list[Message], *, role: Role, json_schema: dict[str, Any] | None = None, **kw: Any) -> tuple[Any, ChatReply]:
        reply = await self.chat(messages, role=role, json_schema=json_schema, **kw)
        return json.loads(reply.text), reply

    @staticmethod
    def _json(prompt: str, schema: dict[str, Any]) -> str:
        properties = schema.get("properties", {})
        if "facts" in properties:  # AWE extraction: the facts stated in the conversation
            conversation = prompt.split("Conversation:", 1)[1]
            return json.dumps({"facts": [f"var{n} is now {v}" for n, v in _FACT.findall(conversation)]})
        if "action" in properties:  # AWE reconciliation: replace the memory about the same variable
            stored = json.loads(prompt.split("):\n", 1)[1].split("\n\nNew fact:", 1)[0])
            new = _FACT.search(prompt.split("New fact:", 1)[1])
            same = [m["id"] for m in stored if new and f"var{new.group(1)} " in m["text"] + " "]
            return json.dumps({"action": "update", "id": same[0]} if same else {"action": "add"})
        conversation = prompt.split("Latest conversation", 1)[1]  # AWI notes: one label per variable
        return json.dumps({f"var{n}": f"is now {v}" for n, v in _FACT.findall(conversation)})


async def measure(kind: str, periods: int, sessions: int, rounds: int) -> list[tuple[int, int, int]]:
    """(calls, prompt tokens, stored memory items) per period."""
    llm = ScriptedBenchmarkLLM()
    agent = build_agent(MemoryPolicy(kind=kind, update_every=2, short_term=4, top_k=10), llm)
    start = datetime(2021, 1, 1)
    rows = []
    for period in range(periods):
        calls, tokens = llm.calls, llm.prompt_tokens
        for session in range(sessions):
            now = start + timedelta(days=90 * period + 7 * session)
            step = period * sessions + session
            for turn in range(rounds):
                prefix = f"[Current Time: {now:%Y-%m-%d}]\n" if turn == 0 else ""
                fact = f"By the way, var{step % VARIABLES} is now value{step}. " if turn == 0 else ""
                await agent.respond(prefix + fact + FILLER, now)
            await agent.end_session(now)
        for q in range(3):
            await agent.answer(f"Question about var{q}? (1) a (2) b", query=f"what is var{q}?", now=now)
        rows.append((llm.calls - calls, llm.prompt_tokens - tokens, memory_size(agent.state())))
    return rows


def memory_size(state: dict[str, Any]) -> int:
    if "history" in state:
        return len(state["history"])
    memory = state["memory"]
    return len(memory["memories"]) if isinstance(memory, dict) else len(memory)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--periods", type=int, default=6)
    parser.add_argument("--sessions", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    kinds = ["native", "rag", "awi", "awe"]
    results = {kind: asyncio.run(measure(kind, args.periods, args.sessions, args.rounds)) for kind in kinds}
    print(f"{args.sessions} sessions x {args.rounds} rounds + 3 questions per period; update_every=2, short_term=4, top_k=10")
    print("cells: LLM calls / prompt tokens (chars/4) / stored items (native: messages)")
    print("| period | " + " | ".join(kinds) + " |")
    print("|---|" + "---|" * len(kinds))
    for period in range(args.periods):
        cells = [f"{c} / {t} / {m}" for c, t, m in (results[k][period] for k in kinds)]
        print(f"| {period} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
