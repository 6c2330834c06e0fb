"""The upper-bound table of a run folder: read back when it still fits, computed and saved when not.

``memevo evolve`` goes through here, so a table is computed once per run folder and reused only for the
same items under the same answer decoding; ``memevo eval``'s own copy (changed on main since this branch
began: prompt digests, a no-memory table) is meant to move here when the branches meet.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from memevo.agents.llm.protocol import ChatClient
from memevo.environments.data.models import Item
from memevo.environments.metrics import UpperBoundEntry, UpperBoundTable, compute_upper_bound
from memevo.environments.store import write_json_atomic


async def cached_upper_bound(
    llm: ChatClient,
    items: Sequence[Item],
    path: Path,
    *,
    amemgym_compat: bool,
    constrained: bool,
    seed: int,
    model: str = "",
    on_entry: Callable[[UpperBoundEntry], None] | None = None,
) -> UpperBoundTable:
    """The table stored at ``path`` when it covers ``items`` with the same decoding, else a fresh one."""
    if path.exists():
        table = UpperBoundTable.model_validate_json(path.read_text(encoding="utf-8"))
        covered = {item.id for item in items} <= {entry.item_id for entry in table.entries}
        if covered and table.constrained == constrained:
            return table
    table = await compute_upper_bound(
        llm, items, model=model, amemgym_compat=amemgym_compat, constrained=constrained, seed=seed, on_entry=on_entry
    )
    write_json_atomic(path, table.model_dump(mode="json"))
    return table
