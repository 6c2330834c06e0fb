"""TEST DOUBLE backend whose proposer replies come back cut at their token cap, and which warns as libraries do (a
Python warning, a LiteLLM log record) at each proposal."""

from __future__ import annotations

import logging
import warnings
from typing import Any

from memevo.agents.llm.protocol import ChatReply, Message, Role
from tests.doubles.category_backend import CategoryBackend

LIBRARY_WARNING = "TEST DOUBLE library warning"
LIBRARY_LOG_RECORD = "TEST DOUBLE LiteLLM log record"


class TruncatingBackendDouble(CategoryBackend):
    """TEST DOUBLE: ``CategoryBackend`` whose proposer replies say ``finish_reason="length"``."""

    async def chat(self, messages: list[Message], *, role: Role, **options: Any) -> ChatReply:
        reply = await super().chat(messages, role=role, **options)
        if role != "proposer":
            return reply
        warnings.warn(LIBRARY_WARNING, UserWarning, stacklevel=1)
        logging.getLogger("LiteLLM").warning(LIBRARY_LOG_RECORD)
        return reply.model_copy(update={"finish_reason": "length"})
