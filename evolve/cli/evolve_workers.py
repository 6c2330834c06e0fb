"""``memevo evolve --workers N [--store URL]``: this process is one worker of the evolution and starts N-1 more.

Workers on other machines join with the same command, ``--store`` (a PostgreSQL URL) and ``--run-dir`` (a folder
every machine mounts at the same path); see ``memevo.evolve.workers.evolve_worker``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from memevo.environments.resume import resumable
from memevo.environments.rundir import check_kind, check_writable

if TYPE_CHECKING:
    from memevo.evolve.config import EvolveConfig
    from memevo.evolve.records import EvolutionResult


def evolve_with_workers(ctx: typer.Context, settings: EvolveConfig, config: Path, folder: Path, *, workers: int,
                        store: str | None, resume: bool, no_cache: bool,
                        concurrency: int | None) -> EvolutionResult:
    from memevo.agents.llm.hub import LLMHub
    from memevo.evolve.databases import check_database_url, check_reachable
    from memevo.evolve.plugins import make_tracker
    from memevo.evolve.runtime import check_stores
    from memevo.evolve.workers.evolve_worker import check_shareable, run_evolution_worker, shared_study
    from memevo.evolve.workers.identity import run_identity
    from memevo.evolve.workers.launch import sibling_workers, worker_store
    from memevo.evolve.workers.worker import WorkerSettings

    check_shareable(settings, f"--workers {workers}" if workers > 1 else "--store")
    check_writable(folder, field="run_dir")
    check_kind(folder, "evolution", field="run_dir")
    url = worker_store(store, folder)
    check_database_url(url, source="command line", field="--store")
    check_reachable(url, source="command line", field="--store")
    run_identity(url, settings.name, folder)
    settings = shared_study(settings, url)
    check_stores(settings, folder)  # every store reached before the tracker's opens and any worker starts
    extra = [*(["--resume"] if resume else []), *(["--no-cache"] if no_cache else []),
             *([f"--concurrency={concurrency}"] if concurrency else [])]
    if settings.tracking.enabled:  # a new store is created once, before the workers open it
        tracker = make_tracker(settings.tracking.tracker)
        tracker.open_store(settings.tracking.uri or tracker.ui().default_store(folder))
    with (sibling_workers(workers - 1, config, folder, url, extra, command_name="evolve"), resumable(ctx),
          LLMHub(use_cache=not no_cache, concurrency=concurrency) as hub):
        return run_evolution_worker(settings, run_dir=folder, hub=hub, resume=resume,
                                    settings=WorkerSettings(store=url))
