"""Ranking memories for a query: BM25 (default, no service needed) or embeddings from an endpoint.

The embeddings path talks to an OpenAI-compatible ``/embeddings`` endpoint through the openai SDK,
because the chat gateway has no embeddings call; its cost is therefore not in the gateway's accounting.
"""

from __future__ import annotations

from typing import Any, Protocol

import bm25s
import numpy as np

from memevo.agents.errors import UserInputError
from memevo.agents.policy import MemoryPolicy


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


class EmbeddingsClient(Protocol):
    """The slice of ``openai.AsyncOpenAI`` used here: ``client.embeddings.create(model=, input=)``."""

    embeddings: Any


class EmbeddingRetriever:
    """Cosine similarity of endpoint embeddings; embeddings of texts are cached in memory by text."""

    def __init__(self, client: EmbeddingsClient, model: str) -> None:
        self.client = client
        self.model = model
        self._cache: dict[str, np.ndarray] = {}

    async def rank(self, query: str, texts: list[str], k: int) -> list[int]:
        if not texts:
            return []
        await self._embed([query, *texts])
        matrix = np.stack([self._cache[t] for t in texts])
        scores = matrix @ self._cache[query]
        return [int(i) for i in np.argsort(-scores, kind="stable")[:k]]

    async def _embed(self, texts: list[str]) -> None:
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if not missing:
            return
        response = await self.client.embeddings.create(model=self.model, input=missing)
        for text, item in zip(missing, response.data, strict=True):
            vector = np.asarray(item.embedding, dtype=np.float32)
            self._cache[text] = vector / (np.linalg.norm(vector) or 1.0)


def make_retriever(policy: MemoryPolicy, embeddings: EmbeddingsClient | None = None) -> Retriever:
    """The retriever ``policy.retrieval`` names; builds an openai client for embeddings if none is given."""
    if policy.retrieval == "bm25":
        return BM25Retriever()
    if policy.retrieval == "embedding":
        if not policy.embedding_model:
            raise UserInputError("retrieval 'embedding' needs embedding_model", field="embedding_model")
        if embeddings is None:
            from openai import AsyncOpenAI

            embeddings = AsyncOpenAI(base_url=policy.llm.resolved_base_url(), api_key=policy.llm.api_key())
        return EmbeddingRetriever(embeddings, policy.embedding_model)
    raise UserInputError(f"unknown retrieval '{policy.retrieval}' (known: bm25, embedding)", field="retrieval")
