"""TEST DOUBLE driver: one ablation worker process with chosen heartbeat and grace (the CLI keeps the defaults).

``python -m tests.doubles.ablation_worker_process CONFIG RUN_DIR STORE NAME GRACE_S`` runs
``run_ablation_worker`` with a real ``LLMHub`` (the config's endpoint, e.g. a fault server), so tests and the
workers benchmark can kill one worker mid-unit and watch another take its unit over after ``GRACE_S``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from memevo.agents.llm.hub import LLMHub
from memevo.evolve.ablation.config import load_ablation_config
from memevo.evolve.workers.ablation_worker import WorkerSettings, run_ablation_worker


def main(config: str, run_dir: str, store: str, name: str, grace_s: str) -> None:
    settings = WorkerSettings(store=store, name=name, grace_s=float(grace_s), heartbeat_s=float(grace_s) / 4,
                              poll_s=0.2)
    with LLMHub(use_cache=False) as hub:
        run_ablation_worker(load_ablation_config(Path(config)), run_dir=Path(run_dir), hub=hub, settings=settings,
                            progress=lambda line: print(line, flush=True))


if __name__ == "__main__":
    main(*sys.argv[1:])
