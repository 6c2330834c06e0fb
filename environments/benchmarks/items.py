"""What every benchmark becomes once read: sessions to replay in order, then questions to ask.

Questions carry what the agent may see and nothing else; each benchmark keeps its gold answers in its own
answer key, so a record built from a ``Question`` cannot leak the answer.
"""

from __future__ import annotations

from datetime import datetime

from memevo.agents.lazy_model import LazyModel


class Exchange(LazyModel):
    """One recorded exchange, replayed to the agent with ``ingest`` (off-policy)."""

    user: str
    assistant: str


class Session(LazyModel):
    session_id: str
    when: datetime
    exchanges: list[Exchange]


class Question(LazyModel):
    """``prompt`` is the text the agent answers (options included where the benchmark shows them); ``question``
    the bare question, for retrieval."""

    question_id: str
    category: str
    question: str
    prompt: str
    asked_at: datetime


class BenchItem(LazyModel):
    """One unit a run resets the agent for: a LoCoMo conversation, a LongMemEval question with its haystack, a
    MemoryAgentBench context, a MemoryBench dataset."""

    item_id: str
    split: str = "test"
    sessions: list[Session]
    questions: list[Question]

    @property
    def exchanges(self) -> int:
        return sum(len(session.exchanges) for session in self.sessions)
