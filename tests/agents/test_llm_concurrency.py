"""Concurrency is settable by flag, environment and config, with defaults per kind of endpoint."""

from __future__ import annotations

from pathlib import Path

import pytest

from memevo.agents.llm.config import CONCURRENCY_ENV, EMBEDDED_CONCURRENCY, REMOTE_CONCURRENCY, LLMConfig
from memevo.agents.llm.hub import LLMHub
from memevo.agents.policy import MemoryPolicy
from memevo.core.errors import UserInputError

URL = "http://127.0.0.1:9/v1"


@pytest.fixture(autouse=True)
def no_env(monkeypatch):
    monkeypatch.delenv(CONCURRENCY_ENV, raising=False)


def test_flag_beats_environment_beats_config_beats_default(monkeypatch):
    configured = LLMConfig(model="m", max_concurrency=5)
    assert LLMConfig(model="m").concurrency(embedded=False) == REMOTE_CONCURRENCY
    assert LLMConfig(model="m").concurrency(embedded=True) == EMBEDDED_CONCURRENCY
    assert configured.concurrency(embedded=False) == 5
    monkeypatch.setenv(CONCURRENCY_ENV, "7")
    assert configured.concurrency(embedded=True) == 7
    assert configured.concurrency(embedded=False, override=3) == 3


@pytest.mark.parametrize("value", ["0", "-2", "many", "1.5"])
def test_a_bad_environment_value_names_the_variable(monkeypatch, value):
    monkeypatch.setenv(CONCURRENCY_ENV, value)
    with pytest.raises(UserInputError, match=CONCURRENCY_ENV):
        LLMConfig(model="m").concurrency(embedded=False)


def test_hub_flag_sets_the_endpoint_limit_for_every_config(tmp_path: Path):
    with LLMHub(cache_dir=tmp_path, concurrency=32) as hub:
        assert hub.client(LLMConfig(model="m", base_url=URL, max_concurrency=2)).limit.limit == 32
    with LLMHub(cache_dir=tmp_path) as hub:
        assert hub.client(LLMConfig(model="m", base_url=URL)).limit.limit == REMOTE_CONCURRENCY


def test_concurrency_does_not_change_the_policy_id():
    ids = {MemoryPolicy(kind="native", llm=LLMConfig(model="m", max_concurrency=n)).policy_id for n in (None, 1, 64)}
    assert len(ids) == 1
