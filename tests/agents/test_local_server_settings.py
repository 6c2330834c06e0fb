"""The embedded server's thread count and prompt-cache size: from the environment, else from the machine."""

from __future__ import annotations

import pytest

from memevo.agents.llm.local_server import (
    CACHE_ENV,
    DEFAULT_CACHE_MB,
    THREADS_ENV,
    default_cache_mb,
    default_threads,
)
from memevo.core.errors import UserInputError


def test_the_environment_sets_threads_and_cache(monkeypatch):
    monkeypatch.setenv(THREADS_ENV, "3")
    monkeypatch.setenv(CACHE_ENV, "0")
    assert default_threads() == 3 and default_cache_mb() == 0
    monkeypatch.delenv(CACHE_ENV)
    assert default_cache_mb() == DEFAULT_CACHE_MB


@pytest.mark.parametrize(("name", "value", "read"), [(THREADS_ENV, "0", default_threads),
                                                     (CACHE_ENV, "1.5GB", default_cache_mb)])
def test_a_bad_setting_names_the_variable(monkeypatch, name, value, read):
    monkeypatch.setenv(name, value)
    with pytest.raises(UserInputError, match=name):
        read()
