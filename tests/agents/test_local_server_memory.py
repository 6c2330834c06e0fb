"""The real embedded server's memory stays near its prompt-cache size however many different prompts it reads.

Before the fix each request's saved state carried an uncounted copy of every prompt token's logits (about 140 MB for
these 700-token prompts), so a 100 MB cache kept six of them, about 700 MB more than after the first chat.
"""

from __future__ import annotations

import httpx
import pytest

from benchmarks.llama_memory import rss_bytes
from memevo.agents.llm.config import LOCAL_MODEL_NAME
from memevo.agents.llm.local_server import LocalModelServer

CACHE_MB = 100
SLACK_MB = 150
"""Allocator and buffer noise allowed on top of the cache (the fault grew by about 120 MB per chat)."""


@pytest.mark.integration
def test_six_different_long_chats_grow_the_server_by_no_more_than_its_cache():
    with LocalModelServer(cache_mb=CACHE_MB, n_threads=2) as server, httpx.Client(timeout=600) as client:
        def chat(index: int) -> None:
            text = " ".join(f"fact {index}-{n}: the user owns {n + index} green bicycles." for n in range(60))
            body = {"model": LOCAL_MODEL_NAME, "messages": [{"role": "user", "content": text}], "max_tokens": 2}
            client.post(f"{server.url}/chat/completions", json=body).raise_for_status()

        chat(0)
        after_first = rss_bytes(server.pid)
        for index in range(1, 7):
            chat(index)
        grown_mb = (rss_bytes(server.pid) - after_first) / 2**20
    assert grown_mb < CACHE_MB + SLACK_MB, f"the server grew by {grown_mb:.0f} MB over 6 chats"
