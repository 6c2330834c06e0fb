"""One worker of an ablation spread over several processes: claim an (arm, seed), run it, repeat.

Every worker registers the same units in the shared claim store; one of them prepares the run folder and the
MLflow parent run (the ``prepare`` unit), all of them then claim (arm, seed) evolutions in the order a single
process runs them, and the one that claims ``summary`` after the last evolution writes the tables and closes the
parent run. A worker that dies leaves its unit running with a stale heartbeat; another claims it after the grace
period and resumes its folder, so each evolution finishes once and keeps its one MLflow run. The run folder is
shared (one machine, or a network folder every machine mounts); the claim store and the MLflow store must be
reachable by all workers.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

from memevo.evolve import runtime
from memevo.evolve.ablation.config import AblationConfig, resolve_all
from memevo.evolve.ablation.run import AblationOutcome, finish_ablation, run_unit, start_ablation
from memevo.evolve.workers.claims import DONE, ClaimStore
from memevo.evolve.workers.worker import WorkerSettings, work_through

PREPARE, SUMMARY = "prepare", "summary"


def unit_name(arm: str, seed: int) -> str:
    return f"{arm}/seed-{seed}"


def ablation_job(config: AblationConfig) -> str:
    """The claim store's name for this ablation: its name and a hash of its config."""
    digest = hashlib.sha256(json.dumps(config.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()[:16]
    return f"ablation/{config.name}/{digest}"


def run_ablation_worker(config: AblationConfig, *, run_dir: Path, hub: runtime.Hub, settings: WorkerSettings,
                        progress: Callable[[str], None] = print) -> AblationOutcome | None:
    """Work on the ablation until every unit is done; the outcome when this worker wrote the summary, else None."""
    resolved = {unit_name(arm, seed): (arm, seed, evolve_config)
                for (arm, seed), evolve_config in resolve_all(config).items()}
    store = ClaimStore(settings.store)
    job = ablation_job(config)
    store.register(job, [PREPARE, *resolved, SUMMARY])
    if store.states(job)[SUMMARY] == DONE:
        progress(f"[{settings.name}] this ablation is finished: nothing to do")
        return None
    work_through(store, job, [PREPARE], settings, lambda unit: start_ablation(config, run_dir, resume=True))
    manifest, observers = start_ablation(config, run_dir, resume=True)  # as the prepare unit left it

    def run_one(unit: str) -> None:
        arm, seed, evolve_config = resolved[unit]
        progress(f"[{settings.name}] claimed {unit}")
        run_unit(arm, seed, evolve_config, manifest=manifest, run_dir=run_dir, hub=hub, observers=observers,
                 progress=progress)

    work_through(store, job, list(resolved), settings, run_one)
    outcomes: list[AblationOutcome] = []
    work_through(store, job, [SUMMARY], settings,
                 lambda unit: outcomes.append(finish_ablation(observers, manifest, run_dir)), wait=False)
    return outcomes[0] if outcomes else None

