"""Endpoint and sampling settings of one LLM, as used by agents, simulators, generators and proposers."""

from __future__ import annotations

import os

from pydantic import BaseModel, ConfigDict, Field

LOCAL_MODEL_NAME = "smollm2-135m-instruct"
MODEL_ENV = "MEMEVO_MODEL"


def default_model() -> str:
    """``MEMEVO_MODEL`` when set (so one variable points every role at a remote model), else the local one."""
    return os.environ.get(MODEL_ENV) or LOCAL_MODEL_NAME


class LLMConfig(BaseModel):
    """Settings for one OpenAI-compatible chat model.

    ``base_url`` None means: take ``OPENAI_BASE_URL`` if set, else start the embedded local model.
    ``model`` left out means ``MEMEVO_MODEL`` if set, else the embedded model; the chosen name is
    stored in the config, so results always say which model produced them.
    The API key itself is never stored here, only the name of the environment variable holding it,
    so configs can be logged and hashed safely.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = Field(default_factory=default_model)
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(512, gt=0)
    timeout_s: float = Field(120.0, gt=0)
    max_concurrency: int = Field(4, ge=1)
    max_retries: int = Field(5, ge=0)

    def resolved_base_url(self) -> str | None:
        """The endpoint to call: the explicit one, else ``OPENAI_BASE_URL``, else None (local model)."""
        return self.base_url or os.environ.get("OPENAI_BASE_URL") or None

    def api_key(self) -> str:
        """The key read from the environment at call time; local servers accept any placeholder."""
        return os.environ.get(self.api_key_env) or "sk-no-key-needed"
