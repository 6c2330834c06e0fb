"""What RAG and AWE share: a SQLite memory store and top-k retrieval for each reply (reference E.3).

Retrieved memories are shown oldest first by ``updated_at`` (simulated time), as AMemGym sorts them, each with
that date (not under ``amemgym_compat``: AMemGym showed none).
"""

from __future__ import annotations

from typing import Any

from memevo.agents.buffered import BufferedMemoryAgent
from memevo.agents.llm.protocol import ChatClient
from memevo.agents.policy import MemoryPolicy
from memevo.agents.prompts.dates import dated
from memevo.agents.retrieval import make_retriever
from memevo.agents.store import MemoryStore, StoredMemory


class ExternalMemoryAgent(BufferedMemoryAgent):
    """A buffered agent whose long-term memory is a ``MemoryStore`` searched per message.

    ``db_path`` puts the store in a file instead of in process. With ``policy.retrieval == "embedding"``
    the embeddings come from ``llm`` too (it must be an ``EmbeddingClient``).
    """

    def __init__(self, policy: MemoryPolicy, llm: ChatClient, *, db_path: str = ":memory:") -> None:
        super().__init__(policy, llm)
        self.store = MemoryStore(db_path)
        self.retriever = make_retriever(policy, llm)

    async def search(self, query: str, k: int) -> list[StoredMemory]:
        """The ``k`` memories most relevant to ``query``, best first."""
        memories = self.store.all()
        return [memories[i] for i in await self.retriever.rank(query, [m.text for m in memories], k)]

    async def memory_text(self, query: str) -> str:
        found = await self.search(query, self.policy.top_k)
        shown = sorted(found, key=lambda m: (m.updated_at, m.id))
        if self.policy.amemgym_compat:  # AMemGym showed no dates
            return "\n".join(f"- {m.text}" for m in shown)
        return "\n".join(f"- {dated(m.text, m.updated_at)}" for m in shown)

    def memory_state(self) -> dict[str, Any]:
        return self.store.dump()

    def load_memory_state(self, data: dict[str, Any]) -> None:
        self.store.restore(data)
