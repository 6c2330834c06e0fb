"""The benchmark environments by the name a config or ``memevo env --environment`` uses, and their data figures.

Modules are imported when asked for, so a command that reads one benchmark does not import the others.
"""

from __future__ import annotations

import importlib
from collections import Counter
from pathlib import Path
from typing import Any

from memevo.agents.errors import UserInputError
from memevo.agents.lazy_model import LazyModel
from memevo.environments.benchmarks.environment import BenchmarkEnvironment

BENCHMARKS = {
    "locomo": ("memevo.environments.benchmarks.locomo", "LocomoEnvironment"),
    "longmemeval": ("memevo.environments.benchmarks.longmemeval", "LongMemEvalEnvironment"),
    "memoryagentbench": ("memevo.environments.benchmarks.memoryagentbench", "MemoryAgentBenchEnvironment"),
    "memorybench": ("memevo.environments.benchmarks.memorybench", "MemoryBenchEnvironment"),
}


def benchmark(name: str, path: str | Path, **options: Any) -> BenchmarkEnvironment:
    """The environment ``name`` over the user's data at ``path``."""
    if name not in BENCHMARKS:
        raise UserInputError(f"unknown environment {name!r}; known: amemgym, {', '.join(BENCHMARKS)}",
                             field="environment")
    module, attribute = BENCHMARKS[name]
    environment: BenchmarkEnvironment = getattr(importlib.import_module(module), attribute)(path, **options)
    return environment


class BenchmarkStats(LazyModel):
    """What a benchmark's files hold, as replayed: items, sessions, exchanges, questions and transcript size."""

    environment: str
    data_bytes: int
    items: int
    items_per_split: dict[str, int]
    sessions: int
    exchanges: int
    questions: int
    questions_per_category: dict[str, int]
    transcript_chars: int
    """Characters the agent is given to ingest (both sides of every exchange)."""


def benchmark_stats(environment: BenchmarkEnvironment) -> BenchmarkStats:
    items = environment.items()
    return BenchmarkStats(
        environment=environment.name, data_bytes=_size(environment.path), items=len(items),
        items_per_split=dict(Counter(item.split for item in items)),
        sessions=sum(len(item.sessions) for item in items), exchanges=sum(item.exchanges for item in items),
        questions=sum(len(item.questions) for item in items),
        questions_per_category=_in_order(Counter(q.category for item in items for q in item.questions),
                                         environment.categories),
        transcript_chars=sum(len(e.user) + len(e.assistant) for item in items for s in item.sessions
                             for e in s.exchanges))


def _in_order(counts: Counter[str], order: tuple[str, ...]) -> dict[str, int]:
    """The benchmark's own category order first, then the rest as they appeared."""
    return {name: counts[name] for name in (*[n for n in order if n in counts], *counts) if name in counts}


def _size(path: Path) -> int:
    if path.is_dir():
        return sum(file.stat().st_size for file in path.rglob("*") if file.is_file())
    return path.stat().st_size
