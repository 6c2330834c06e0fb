"""The agent's gateway seen from a synchronous library (Mem0 calls its LLM and embedder synchronously).

The library runs in a worker thread (``asyncio.to_thread``); each call it makes is sent through the sync bridge
to the agent's own client, so it shares the gateway's cache, concurrency limit, retries, budget and accounting.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memevo.agents.llm.protocol import ChatClient, EmbeddingClient, Message
from memevo.agents.llm.sync_bridge import run_sync


class SyncChat:
    """``generate_response`` as Mem0's LLM classes offer it, answered by ``client`` under the role ``agent``.

    ``on_reply`` is given the text of every reply (the agent counts its write requests and their failures). Tool
    calls are refused: the gateway makes none, and only Mem0's graph memory asks for them."""

    def __init__(self, client: ChatClient, *, max_tokens: int | None, on_reply: Callable[[str], None]) -> None:
        self.client = client
        self.max_tokens = max_tokens
        self.on_reply = on_reply

    def generate_response(self, messages: list[Message], response_format: Any = None, tools: Any = None,
                          tool_choice: str = "auto", **_: Any) -> str:
        if tools:
            raise NotImplementedError("memevo's gateway makes no tool calls (Mem0's graph memory needs them)")
        wants_json = isinstance(response_format, dict) and response_format.get("type") == "json_object"
        messages = [{"role": m["role"], "content": m["content"]} for m in messages]
        reply = run_sync(self.client.chat(messages, role="agent", json_mode=wants_json, max_tokens=self.max_tokens))
        self.on_reply(reply.text)
        return reply.text


class SyncEmbedder:
    """``embed`` as Mem0's embedders offer it: one vector for one text, from ``client``'s ``model``.

    Every vector is kept by its text, exactly as the endpoint gave it: a text is embedded once, and the agent saves
    its stored memories' vectors from here (a vector store may hand back a vector it normalised, in other bits)."""

    def __init__(self, client: EmbeddingClient, model: str) -> None:
        self.client = client
        self.model = model
        self.vectors: dict[str, list[float]] = {}

    def embed(self, text: str, memory_action: str | None = None) -> list[float]:
        if text not in self.vectors:
            self.vectors[text] = run_sync(self.client.embed([text], role="agent", model=self.model))[0]
        return self.vectors[text]
