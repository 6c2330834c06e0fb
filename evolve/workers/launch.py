"""``memevo ablate --workers N`` and ``memevo evolve --workers N`` on one machine: this process is one worker and
starts N-1 more of itself."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

WORKER_STORE_FILE = "workers.db"
"""The claim store of workers on one machine when no ``--store`` is given: an SQLite file in the run folder."""


def worker_store(store: str | None, folder: Path) -> str:
    if store:
        return store
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{(folder / WORKER_STORE_FILE).resolve()}"


@contextmanager
def sibling_workers(count: int, config: Path, folder: Path, store: str, extra: list[str], *,
                    command_name: str = "ablate") -> Iterator[None]:
    """Start ``count`` more ``memevo <command_name>`` workers on ``store``; on leaving, wait for them. When this
    worker's body ended the work (it returns once every unit is done), one that failed is a warning: its units were
    taken over (an error of this worker's own stops it: its unit is left to the others and to a resume)."""
    command = [sys.executable, "-m", "memevo.evolve.cli", command_name, str(config), "--run-dir", str(folder),
               "--store", store, *extra]
    siblings = [subprocess.Popen(command) for _ in range(count)]
    try:
        yield
    except BaseException:
        for sibling in siblings:
            sibling.terminate()
        raise
    finally:
        codes = [sibling.wait() for sibling in siblings]
    failed = [code for code in codes if code != 0]
    if failed:
        print(f"memevo: {len(failed)} of {count} other worker(s) failed (exit {failed[0]}); this worker finished "
              "their work", file=sys.stderr)

