"""Ranking memories for a query: BM25 (default, no service needed) or embeddings from an endpoint.

Embeddings come from the agent's own LLM client (``EmbeddingClient.embed``, i.e. the gateway), so they
share its endpoint, cache, concurrency limit, retries and accounting; nothing here opens a connection.
"""

from __future__ import annotations

from typing import Protocol

import bm25s
import numpy as np

from memevo.agents.llm.config import LLMConfig, default_embedding_model
from memevo.agents.llm.protocol import ChatClient, EmbeddingClient
from memevo.agents.policy import MemoryPolicy
from memevo.core.errors import UserInputError


class Retriever(Protocol):
    """Ranks candidate texts for a query."""

    async def rank(self, query: str, texts: list[str], k: int) -> list[int]:
        """Indices into ``texts`` of the (at most) ``k`` best matches, best first."""
        ...


def _tokens(texts: list[str]) -> list[list[str]]:
    return bm25s.tokenize(texts, stopwords="en", return_ids=False, show_progress=False)


class BM25Retriever:
    """Okapi BM25 over the candidates (rebuilt per call: stores hold hundreds of texts, not millions).

    Texts sharing no term with the query score 0 and are never returned. Texts made only of stop
    words or punctuation (small models write such "facts") have no terms at all.
    """

    async def rank(self, query: str, texts: list[str], k: int) -> list[int]:
        query_tokens = _tokens([query])
        corpus = _tokens(texts)
        if not query_tokens[0] or not any(corpus):
            return []
        index = bm25s.BM25()
        index.index(corpus, show_progress=False)
        found, scores = index.retrieve(query_tokens, k=min(k, len(texts)), show_progress=False)
        return [int(i) for i, score in zip(found[0], scores[0], strict=True) if score > 0]


class EmbeddingRetriever:
    """Cosine similarity of embeddings from ``client``.

    Normalised vectors are also kept in memory by text: the store is re-ranked on every message, and
    asking the client again would re-count every stored text as workload even when its cache answers.
    """

    def __init__(self, client: EmbeddingClient, model: str) -> None:
        self.client = client
        self.model = model
        self._vectors: dict[str, np.ndarray] = {}

    async def rank(self, query: str, texts: list[str], k: int) -> list[int]:
        if not texts:
            return []
        await self._embed([query, *texts])
        matrix = np.stack([self._vectors[t] for t in texts])
        scores = matrix @ self._vectors[query]
        return [int(i) for i in np.argsort(-scores, kind="stable")[:k]]

    async def _embed(self, texts: list[str]) -> None:
        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if not missing:
            return
        vectors = await self.client.embed(missing, role="agent", model=self.model)
        for text, raw in zip(missing, vectors, strict=True):
            vector = np.asarray(raw, dtype=np.float32)
            self._vectors[text] = vector / (np.linalg.norm(vector) or 1.0)


def embedding_source(policy: MemoryPolicy, llm: ChatClient, needs: str, *, hint: str = "",
                     field: str) -> tuple[EmbeddingClient, str]:
    """``llm`` as an embedding client and the policy's embeddings model (by default the embedded server's, when
    ``llm`` runs on it), or a ``UserInputError`` saying what ``needs`` them (``field`` names the setting to change
    when ``llm`` cannot embed)."""
    model = policy.embedding_model or _embedded_server_model(llm)
    if not model:
        raise UserInputError(f"{needs} needs embedding_model (the endpoint's embeddings model)",
                             field="embedding_model")
    if not isinstance(llm, EmbeddingClient):
        raise UserInputError(
            f"{needs} needs an LLM client that can embed texts; {type(llm).__name__} cannot{hint}", field=field)
    return llm, model


def _embedded_server_model(llm: ChatClient) -> str | None:
    """The embedded server's embeddings model when ``llm`` is a gateway running on it, else None."""
    config = getattr(llm, "config", None)
    return default_embedding_model(config) if isinstance(config, LLMConfig) else None


def make_retriever(policy: MemoryPolicy, llm: ChatClient) -> Retriever:
    """The retriever ``policy.retrieval`` names; embeddings come from ``llm``, which must be able to embed."""
    if policy.retrieval == "bm25":
        return BM25Retriever()
    if policy.retrieval == "embedding":
        return EmbeddingRetriever(*embedding_source(policy, llm, "retrieval 'embedding'", hint=" (use retrieval 'bm25')",
                                                    field="retrieval"))
    raise UserInputError(f"unknown retrieval '{policy.retrieval}' (known: bm25, embedding)", field="retrieval")
