"""What a model's tokens cost: the config's ``price``, else litellm's model table, else free on this machine.

litellm prices thousands of models (OpenAI, Anthropic, Gemini, ...). Its table is read from the copy litellm ships
(``model_prices_and_context_window_backup.json``, the file litellm itself reads offline) rather than through
``import litellm``, which takes seconds at start-up (6.4 s in a fresh interpreter here, against 30 ms to read the
file). A model the table does not know costs nothing when its endpoint is on this machine (a local server); elsewhere
its calls are *unpriced*, and the model is named once, with the fix, so a bill is never silently counted as $0.
"""

from __future__ import annotations

import functools
import importlib.util
import ipaddress
import re
import sys
from pathlib import Path
from urllib.parse import urlsplit

import orjson
from pydantic import ConfigDict, Field

from memevo.core.lazy_model import LazyModel

TABLE_FILE = "model_prices_and_context_window_backup.json"
_DATE_SUFFIX = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8})$")
"""A dated snapshot (``gpt-4o-2024-08-06``, ``claude-3-5-haiku-20241022``) costs what its undated name does."""
_named: set[str] = set()
"""Unpriced models already named in this process."""


class Price(LazyModel):
    """USD per million tokens, as providers list them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt: float = Field(ge=0, description="USD per 1M prompt (input) tokens.")
    completion: float = Field(ge=0, description="USD per 1M completion (output) tokens.")

    def dollars(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.prompt + completion_tokens * self.completion) / 1_000_000


FREE = Price(prompt=0.0, completion=0.0)


@functools.cache
def _table() -> dict[str, Price]:
    """litellm's prices by model name, read once; empty when litellm (or its table) is not installed."""
    spec = importlib.util.find_spec("litellm")  # finds the package without importing it
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    files = [Path(folder) / TABLE_FILE for folder in folders if (Path(folder) / TABLE_FILE).is_file()]
    if not files:
        return {}
    entries = orjson.loads(files[0].read_bytes())
    return {
        name.lower(): Price(prompt=_per_million(entry["input_cost_per_token"]),
                            completion=_per_million(entry.get("output_cost_per_token") or 0.0))
        for name, entry in entries.items()
        if name != "sample_spec" and isinstance(entry, dict)
        and isinstance(entry.get("input_cost_per_token"), int | float)
    }


def _per_million(per_token: float) -> float:
    """A per-token price per million tokens, as listed (0.4, not the 0.39999999999999997 of the float product)."""
    return round(per_token * 1_000_000, 9)


@functools.cache
def table_price(model: str) -> Price | None:
    """litellm's price for ``model``: its exact name, then without a provider prefix (``openai/gpt-4.1``), then
    without a date suffix; None when the table knows none of them. No prefix matching: ``gpt-4o-my-finetune`` is not
    ``gpt-4o``."""
    table = _table()
    name = model.lower()
    segments = name.split("/")
    for tail in ("/".join(segments[start:]) for start in range(len(segments))):
        for candidate in (tail, _DATE_SUFFIX.sub("", tail)):
            if candidate in table:
                return table[candidate]
    return None


def on_this_machine(base_url: str) -> bool:
    """Whether ``base_url`` is a loopback address: a server on this machine (the embedded model, vLLM, Ollama)."""
    host = (urlsplit(base_url).hostname or "").lower()
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name, not an address
        return host == "localhost"


class Pricing:
    """How one gateway's calls are priced: ``overrides`` (the config's ``price`` for its model) first, then litellm's
    table. A model neither knows is free when its ``endpoint`` is on this machine; at a remote one it is unpriced,
    and named once per process on stderr. Without an ``endpoint`` (a count made outside a gateway) the table alone
    prices, and names nothing."""

    def __init__(self, overrides: dict[str, Price] | None = None, *, endpoint: str | None = None) -> None:
        self.overrides = overrides or {}
        self.endpoint = endpoint
        self.local = endpoint is not None and on_this_machine(endpoint)

    def price_for(self, model: str) -> Price | None:
        price = self.overrides.get(model)
        if price is None:
            price = table_price(model)
        if price is None and self.local:
            return FREE
        if price is None and self.endpoint is not None and model not in _named:
            _named.add(model)
            print(f"memevo: no price is known for model '{model}' at {self.endpoint} (litellm's table lacks it): its "
                  "calls count as unpriced and budget.max_dollars stops the run at the first of them; set "
                  "llm.price: {prompt: USD, completion: USD} per 1M tokens", file=sys.stderr)
        return price


TABLE_PRICING = Pricing()
"""litellm's table alone: what a count made outside a gateway is priced by."""
