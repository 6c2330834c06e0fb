"""Requests to the model as the server sees them, by kind: what the quickstart benchmarks count.

Wall time on a shared machine says little; calls, prompt and completion tokens and replies stopped at their
cap are what travel between machines, so the benchmarks count them on the wire, per kind of request.
"""

from __future__ import annotations

import time
from typing import Any

from memevo.agents.llm.transport import JSONTransport


class WireClock:
    """Wraps ``JSONTransport.post`` to sum the time requests spend on the wire (one at a time: the server's busy
    time) and to count each kind of request (option scoring, note writes, replies, proposals) with its tokens and
    how many of its replies stopped at their token cap."""

    def __init__(self) -> None:
        self.busy_s = 0.0
        self.kinds: dict[str, WireKind] = {}
        original = JSONTransport.post

        async def timed(transport: JSONTransport, path: str, payload: Any) -> dict[str, Any]:
            started = time.monotonic()
            reply: dict[str, Any] = {}
            try:
                reply = await original(transport, path, payload)
                return reply
            finally:
                seconds = time.monotonic() - started
                self.busy_s += seconds
                self.kinds.setdefault(request_kind(path, payload), WireKind()).add(reply, seconds)

        JSONTransport.post = timed  # type: ignore[method-assign]

    def totals(self) -> tuple[int, int, int]:
        """Calls, prompt tokens and completion tokens on the wire so far, every kind together."""
        kinds = list(self.kinds.values())
        return (sum(k.calls for k in kinds), sum(k.prompt_tokens for k in kinds),
                sum(k.completion_tokens for k in kinds))


class WireKind:
    """Requests of one kind on the wire: count, tokens as the server reports them, replies cut by their cap."""

    def __init__(self) -> None:
        self.calls = self.prompt_tokens = self.completion_tokens = self.at_cap = 0
        self.seconds = 0.0

    def add(self, reply: dict[str, Any], seconds: float) -> None:
        usage = reply.get("usage") or {}
        self.calls += 1
        self.seconds += seconds
        self.prompt_tokens += int(usage.get("prompt_tokens") or 0)
        self.completion_tokens += int(usage.get("completion_tokens") or 0)
        self.at_cap += any(choice.get("finish_reason") == "length" for choice in reply.get("choices") or [])


def request_kind(path: str, payload: Any) -> str:
    """``score`` (the option route), ``proposal`` (the proposer's DSPy request, known by DSPy's field markers),
    ``json`` (a reply asked as JSON: the agent's note writes) or ``reply`` (the agent's chat replies)."""
    if "option_logprobs" in path:
        return "score"
    body = payload if isinstance(payload, bytes) else b"".join(payload)
    if b"[[ ## " in body:
        return "proposal"
    return "json" if b'"response_format"' in body else "reply"
