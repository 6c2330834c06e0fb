"""The memory policy: everything evolution may change about an agent, as one immutable record."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import ConfigDict, Field

from memevo.agents.llm.config import SPEED_ONLY_FIELDS, LLMConfig
from memevo.core.lazy_model import LazyModel


class MemoryPolicy(LazyModel):
    """An agent kind plus its prompt components and hyperparameters.

    Immutable; ``policy_id`` is a content hash, so results saved under it can never be confused
    between two policies that differ in one character of one prompt.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str = Field(description="Registered agent kind: native, rag, awi, awe or a plug-in name.")
    prompts: dict[str, str] = Field(
        {},
        description="Named prompt components; missing ones take the agent kind's defaults.",
    )
    update_every: int = Field(2, ge=1, description="Messages flushed to memory per write (AMemGym update_bsz).")
    short_term: int = Field(4, ge=0, description="Raw messages kept as context after a flush (local_length).")
    top_k: int = Field(30, ge=1, description="Memories retrieved per query (rag, awe).")
    flush_on_session_end: bool = Field(
        False, description="Write pending short-term messages to memory when a session ends."
    )
    context_token_budget: int | None = Field(
        None, ge=1, description="native only: drop the oldest messages beyond this many tokens."
    )
    retrieval: str = Field("bm25", description="rag/awe retrieval backend: 'bm25' or 'embedding'.")
    embedding_model: str | None = Field(None, description="Embeddings model name when retrieval='embedding'.")
    amemgym_compat: bool = Field(
        False, description="Reproduce the reference's behaviour where it differs (e.g. whole-prompt retrieval query)."
    )
    write_max_tokens: int | None = Field(
        None, ge=1, description="Completion token cap of a memory write (its JSON of notes, facts or decisions); "
        "unset: llm.max_tokens, the cap of replies.",
    )
    write_conversation: Literal["json", "lines"] = Field(
        "json", description="awi only: how a write prompt shows the flushed messages at {conversation}: 'json', a "
        "JSON list of role/content messages (AMemGym's), or 'lines', one 'role: text' line per message.",
    )
    memory_unit: Literal["message", "session"] = Field(
        "message", description="rag only: what one stored memory is: one message (MemoryBench's BM25-M / Emb-M) or "
        "one whole session, written as its messages are flushed and closed when it ends (BM25-S / Emb-S).",
    )
    llm: LLMConfig = Field(default_factory=lambda: LLMConfig.model_validate({}),
                           description="The agent's model and endpoint.")

    def canonical_json(self) -> str:
        """Key-sorted JSON: the form that is hashed and stored."""
        # How many requests run at once, and on how many endpoints, changes how fast results come, never what they are.
        # A field added later is left out while unset, so the policies of existing run folders keep their ids.
        excluded: dict[str, Any] = {"llm": set(SPEED_ONLY_FIELDS)}
        if self.write_max_tokens is None:
            excluded["write_max_tokens"] = True
        if self.write_conversation == "json":
            excluded["write_conversation"] = True
        if self.memory_unit == "message":
            excluded["memory_unit"] = True
        dumped = self.model_dump(mode="json", exclude=excluded)
        return json.dumps(dumped, sort_keys=True, ensure_ascii=False)

    @property
    def policy_id(self) -> str:
        """Short content hash that names this policy's results."""
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()[:16]

    def __hash__(self) -> int:
        return hash(self.policy_id)

    def with_prompts(self, **components: str) -> MemoryPolicy:
        """A copy with some prompt components replaced."""
        return self.model_copy(update={"prompts": {**self.prompts, **components}})

    def with_hyperparameters(self, **values: Any) -> MemoryPolicy:
        """A copy with some hyperparameters replaced, re-validated."""
        return MemoryPolicy.model_validate({**self.model_dump(), **values})
