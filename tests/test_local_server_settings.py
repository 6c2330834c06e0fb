"""The embedded server's thread count and prompt-cache size: from the environment, else from the machine."""

from __future__ import annotations

import pytest

from memevo.agents.llm import local_server
from memevo.agents.llm.local_server import (
    CACHE_ENV,
    DEFAULT_CACHE_MB,
    THREADS_ENV,
    cpu_times,
    default_cache_mb,
    default_threads,
    idle_cores,
)
from memevo.core.errors import UserInputError


def test_cpu_times_count_idle_and_iowait_as_not_busy_and_leave_guest_time_out():
    line = "cpu  100 5 20 800 50 3 2 0 40 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n"
    assert cpu_times(line) == (130, 980)


def test_idle_cores_are_the_share_of_ticks_nobody_used(tmp_path, monkeypatch):
    stat = tmp_path / "stat"
    readings = iter(["cpu 0 0 0 0 0 0 0 0\n", "cpu 150 0 0 50 0 0 0 0\n"])  # 3/4 busy across the window
    monkeypatch.setattr(local_server.Path, "read_text", lambda self: next(readings))
    monkeypatch.setattr(local_server.os, "cpu_count", lambda: 4)
    assert idle_cores(window_s=0.0, stat=stat) == 1


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
