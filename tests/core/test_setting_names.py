"""A setting named by shared code is spelled as the front end in effect writes it: flags by default, keyword
arguments under ``spelled_for(PYTHON)``, also in a worker thread started with a copy of the caller's context."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from contextvars import copy_context

from memevo.core.setting_names import PYTHON, given, setting, spelled_for


def test_the_command_line_spells_flags_by_default() -> None:
    assert setting("run_dir") == "--run-dir"
    assert given("resume") == "--resume" and given("environment", "locomo") == "--environment locomo"


def test_a_python_caller_reads_keyword_arguments_also_from_its_worker_thread() -> None:
    with spelled_for(PYTHON):
        assert setting("run_dir") == "run_dir"
        assert given("resume") == "resume=True" and given("environment", "locomo") == "environment='locomo'"
        with ThreadPoolExecutor(max_workers=1) as worker:
            assert worker.submit(copy_context().run, given, "resume").result() == "resume=True"
    assert given("resume") == "--resume"  # the flag again once the call is over
