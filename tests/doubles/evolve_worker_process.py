"""TEST DOUBLE driver: one evolve worker process with chosen heartbeat and grace (the CLI keeps the defaults).

``python -m tests.doubles.evolve_worker_process CONFIG RUN_DIR STORE NAME GRACE_S`` runs ``run_evolution_worker``
with a real ``LLMHub`` (the config's endpoint, e.g. a fault server) and the Optuna study on ``STORE``'s database
as the CLI puts it, so tests and the workers benchmark can kill one worker mid-candidate and watch another take
its candidate over after ``GRACE_S``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from memevo.agents.llm.hub import LLMHub
from memevo.evolve.config import load_evolve_config
from memevo.evolve.workers.evolve_worker import run_evolution_worker, shared_study
from memevo.evolve.workers.worker import WorkerSettings


def main(config: str, run_dir: str, store: str, name: str, grace_s: str) -> None:
    settings = WorkerSettings(store=store, name=name, grace_s=float(grace_s), heartbeat_s=float(grace_s) / 4,
                              poll_s=0.2)
    with LLMHub(use_cache=False) as hub:
        result = run_evolution_worker(shared_study(load_evolve_config(Path(config)), store), run_dir=Path(run_dir),
                                      hub=hub, resume=True, settings=settings)
    print(f"[{name}] best {result.best.id}", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
