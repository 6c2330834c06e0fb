"""The upper-bound and no-memory tables of a run folder: read back when they still fit, else computed and saved.

``memevo eval`` and ``memevo evolve`` both go through here, so each table is computed once per run folder
and reused only for the same items asked the same way (answer decoding and question prompt texts).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from memevo.agents.llm.protocol import ChatClient
from memevo.environments.data.models import Item
from memevo.environments.metrics import NoMemoryTable, UpperBoundTable, compute_no_memory, compute_upper_bound
from memevo.environments.qa import prompts_digest
from memevo.environments.runner import EpisodeConfig
from memevo.environments.store import write_json_atomic


def asked_alike(table: UpperBoundTable | NoMemoryTable, config: EpisodeConfig) -> bool:
    """Whether a stored table was asked the way this run asks (schema or free, same prompt texts)."""
    return table.constrained == config.constrained_answers and table.prompts == prompts_digest(config.question_prompts)


def _asking(config: EpisodeConfig, model: str, on_entry: Callable[[Any], None] | None) -> dict[str, Any]:
    return {"model": model, "amemgym_compat": config.amemgym_compat, "constrained": config.constrained_answers,
            "seed": config.seed, "prompts": config.question_prompts, "on_entry": on_entry}  # fmt: skip


async def cached_upper_bound(
    llm: ChatClient,
    items: Sequence[Item],
    path: Path,
    config: EpisodeConfig,
    *,
    model: str = "",
    on_entry: Callable[[Any], None] | None = None,
) -> UpperBoundTable:
    """The table stored at ``path`` when it covers ``items`` asked alike, else a fresh one (saved)."""
    if path.exists():
        table = UpperBoundTable.model_validate_json(path.read_text(encoding="utf-8"))
        covered = {item.id for item in items} <= {entry.item_id for entry in table.entries}
        if covered and asked_alike(table, config):
            return table
    table = await compute_upper_bound(llm, items, **_asking(config, model, on_entry))
    write_json_atomic(path, table.model_dump(mode="json"))
    return table


async def cached_no_memory(
    llm: ChatClient,
    items: Sequence[Item],
    path: Path,
    config: EpisodeConfig,
    *,
    model: str = "",
    on_entry: Callable[[Any], None] | None = None,
) -> NoMemoryTable:
    """The no-memory table stored at ``path`` when it covers ``items`` asked alike, else a fresh one (saved)."""
    if path.exists():
        table = NoMemoryTable.model_validate_json(path.read_text(encoding="utf-8"))
        if table.covers(items) and asked_alike(table, config):
            return table
    table = await compute_no_memory(llm, items, **_asking(config, model, on_entry))
    write_json_atomic(path, table.model_dump(mode="json"))
    return table
