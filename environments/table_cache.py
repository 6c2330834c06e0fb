"""The upper-bound and no-memory tables of a run folder: read back when they still fit, else computed and saved.

``memevo eval`` and ``memevo evolve`` both go through here, so each table is computed once per run folder
and reused only when it covers the items and was asked the same way (answer decoding, question prompts).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from memevo.agents.llm.protocol import ChatClient
from memevo.core.atomic_files import write_json_atomic
from memevo.core.run_files import read_or_recompute
from memevo.environments.amemgym.data.models import Item
from memevo.environments.answering import check_answer_mode, resolve_answer_mode
from memevo.environments.metrics import NoMemoryTable, UpperBoundTable, compute_no_memory, compute_upper_bound
from memevo.environments.qa import AnswerMode, prompts_digest
from memevo.environments.runner import EpisodeConfig

log = logging.getLogger("memevo.environments")

Table = TypeVar("Table", UpperBoundTable, NoMemoryTable)
COMPUTE: dict[type, Callable[..., Awaitable[Any]]] = {
    UpperBoundTable: compute_upper_bound,
    NoMemoryTable: compute_no_memory,
}
TABLE_NAMES: dict[type, str] = {UpperBoundTable: "upper bound", NoMemoryTable: "no-memory baseline"}


def asked_alike(table: UpperBoundTable | NoMemoryTable, config: EpisodeConfig, answer_mode: AnswerMode) -> bool:
    """Whether a stored table was asked the way this run asks (schema or free, same prompt texts, same answer mode)."""
    keyed_alike = not isinstance(table, UpperBoundTable) or table.keyed_by_state == config.amemgym_compat
    return (table.constrained == config.constrained_answers and table.answer_mode == answer_mode
            and table.prompts == prompts_digest(config.question_prompts) and keyed_alike)


async def cached_table(
    kind: type[Table],
    llm: ChatClient,
    items: Sequence[Item],
    path: Path,
    config: EpisodeConfig,
    *,
    model: str = "",
    on_entry: Callable[[Any], None] | None = None,
) -> Table:
    """The ``kind`` table stored at ``path`` when it covers ``items`` asked alike, else a fresh one (saved; a damaged
    one is set aside first)."""
    check_answer_mode(config.answer_mode, llm)
    answer_mode = resolve_answer_mode(config.answer_mode, llm, amemgym_compat=config.amemgym_compat)
    table = read_or_recompute(path, kind)
    if table is not None and table.covers(items) and asked_alike(table, config, answer_mode):
        return table
    log.info("asking the bare model for the %s (%s answers) on %d users", TABLE_NAMES[kind], answer_mode, len(items))
    table = await COMPUTE[kind](llm, items, model=model, amemgym_compat=config.amemgym_compat,
                                constrained=config.constrained_answers, seed=config.seed,
                                prompts=config.question_prompts, answer_mode=answer_mode,
                                on_entry=on_entry)  # fmt: skip
    write_json_atomic(path, table.model_dump(mode="json"))
    return table
