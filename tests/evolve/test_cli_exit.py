"""A failed run's one line is the last thing the command prints."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

FAILING_RUN = textwrap.dedent("""
    from memevo.core.errors import RunFailedError
    from memevo.evolve.cli import main as cli

    async def connect() -> None:
        pass

    def failing_app() -> None:
        # What a cancelled HTTP library leaves behind: a connection attempt never started, in a reference cycle,
        # reachable from the failed run's frames.
        left = [connect()]
        left.append(left)
        try:
            raise OSError(28, "No space left on device")
        except OSError as error:
            raise RunFailedError("the disk is full; finished work is saved: free space, then resume with: "
                                 "memevo eval --resume") from error

    cli.app = failing_app
    cli.main()
""")


def test_what_a_failed_run_left_for_the_garbage_collector_prints_nothing_after_its_line() -> None:
    done = subprocess.run([sys.executable, "-c", FAILING_RUN], capture_output=True, text=True, cwd=ROOT, check=False,
                          timeout=120)
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().splitlines() == [
        "memevo: run failed: the disk is full; finished work is saved: free space, then resume with: "
        "memevo eval --resume"], done.stderr
