"""RAG: every raw message becomes a memory, no LLM in the write path (AMemGym rag, mem0 infer=False)."""

from __future__ import annotations

from memevo.agents.base import AgentSpec
from memevo.agents.buffered import BufferedMessage
from memevo.agents.external import ExternalMemoryAgent
from memevo.agents.prompts.answer import answer_component
from memevo.agents.registry import register_agent

PREFIXES = {"user": "USER INPUT: ", "assistant": "ASSISTANT RESPONSE: "}


@register_agent("rag")
class RAGAgent(ExternalMemoryAgent):
    """Stores each flushed message verbatim (with AMemGym's role prefix) and retrieves the top k."""

    spec = AgentSpec(
        kind="rag",
        description="Raw messages stored verbatim; top-k retrieval by BM25 or embeddings.",
        components=(answer_component(in_context=False),),
        hyperparameters=("update_every", "short_term", "top_k"),
    )

    async def write(self, batch: list[BufferedMessage]) -> None:
        for message in batch:
            self.store.add(PREFIXES[message.role] + message.content, message.time)
