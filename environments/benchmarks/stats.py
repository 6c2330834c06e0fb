"""What a benchmark's files hold once read as replay items: items per split, sessions, exchanges, questions per
category and how they are scored, transcript size (``memevo env stats --environment NAME``)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from memevo.core.lazy_model import LazyModel
from memevo.environments.replay import ReplayItem


class BenchmarkStats(LazyModel):
    environment: str
    data_bytes: int
    items: int
    items_per_split: dict[str, int]
    sessions: int
    exchanges: int
    """(user, assistant) pairs the agent ingests."""
    questions: int
    questions_per_category: dict[str, int]
    questions_per_scoring: dict[str, int]
    transcript_chars: int
    """Characters of every replayed message."""


def benchmark_stats(name: str, path: Path, items: list[ReplayItem]) -> BenchmarkStats:
    questions = [question for item in items for question in item.questions]
    return BenchmarkStats(
        environment=name, data_bytes=_size(path), items=len(items),
        items_per_split=dict(Counter(item.split or "(no split)" for item in items)),
        sessions=sum(len(item.sessions) for item in items),
        exchanges=sum(len(session.exchanges()) for item in items for session in item.sessions),
        questions=len(questions),
        questions_per_category=dict(Counter(question.category or "(no category)" for question in questions)),
        questions_per_scoring=dict(Counter(question.scoring for question in questions)),
        transcript_chars=sum(len(message.get("content", "")) for item in items for session in item.sessions
                             for message in session.messages))


def _size(path: Path) -> int:
    if path.is_dir():
        return sum(file.stat().st_size for file in path.rglob("*") if file.is_file())
    return path.stat().st_size if path.is_file() else 0
