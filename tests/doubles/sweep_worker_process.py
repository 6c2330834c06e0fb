"""TEST DOUBLE driver: one worker of a toy hyperparameter sweep, laid out as memevo's sweep workers are designed.

``python -m tests.doubles.sweep_worker_process STUDY_URL CLAIM_URL FOLDER NAME GRACE_S STEP_S`` shares one Optuna
study (memevo's ``Tuner``) and one claim store with the other workers. The units: ``prepare`` (create the study
and its first, enqueued trial), then per generation ``plan`` (ask its trials), one unit per trial (evaluate it on
six "users", reporting each running mean so the median pruner can stop it) and ``tell`` (finish its trials in
order). The objective is a fixed function of the trial's parameters, so any worker computes the same values; a
worker killed mid-trial leaves its unit to another after ``GRACE_S``, which evaluates that trial again under
its own number. ``STEP_S`` is the time one user takes.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from memevo.evolve.config import IntRange, OptunaConfig
from memevo.evolve.tuner import Tuner
from memevo.evolve.workers.claims import ClaimStore
from memevo.evolve.workers.worker import WorkerSettings, work_through

SPACE = {"update_every": IntRange(choices=[1, 2, 4, 8]), "top_k": IntRange(low=10, high=50, step=10)}
FIRST_TRIAL = {"update_every": 8, "top_k": 50}
GENERATIONS, TRIALS_PER_GENERATION, USERS = 3, 3, 6
JOB = "sweep/toy"


def user_value(params: dict[str, int], user: int) -> float:
    return 1.0 - abs(params["update_every"] - 2) / 8 - abs(params["top_k"] - 30) / 100 + 0.02 * (user % 3)


def tuner(study_url: str) -> Tuner:
    config = OptunaConfig(sampler="tpe", seed=0, pruner="median", n_startup_trials=2)
    return Tuner(config, SPACE, storage=study_url, study_name="toy-sweep", first_trial=FIRST_TRIAL, metric="accuracy")


def write_json(path: Path, data: object) -> None:
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(data), encoding="utf-8")
    partial.replace(path)


def main(study_url: str, claim_url: str, folder_name: str, name: str, grace_s: str, step_s: str) -> None:
    folder = Path(folder_name)
    settings = WorkerSettings(store=claim_url, name=name, grace_s=float(grace_s), heartbeat_s=float(grace_s) / 4,
                              poll_s=0.1)
    store = ClaimStore(claim_url)
    store.register(JOB, ["prepare"])
    work_through(store, JOB, ["prepare"], settings, lambda unit: tuner(study_url))
    study = tuner(study_url)
    for generation in range(GENERATIONS):
        plan_path = folder / f"plan-{generation}.json"

        def plan(unit: str, generation: int = generation, plan_path: Path = plan_path) -> None:
            if generation == 0:
                write_json(plan_path, [study.reuse_from(0) or study.ask()])  # the enqueued first trial
                return
            first_path = folder / f"first-{generation}.json"  # saved before asking: a planner's heir asks again
            if not first_path.exists():
                write_json(first_path, study.next_number())
            study.reuse_from(json.loads(first_path.read_text()))
            write_json(plan_path, [study.ask() for _ in range(TRIALS_PER_GENERATION)])

        store.register(JOB, [f"gen-{generation}/plan"])
        work_through(store, JOB, [f"gen-{generation}/plan"], settings, plan)
        planned = {int(number): params for number, params in json.loads(plan_path.read_text())}
        numbers = list(planned)

        def evaluate(unit: str) -> None:
            number = int(unit.rsplit("-", 1)[1])
            print(f"[{name}] claimed {unit}", flush=True)
            params = planned[number]
            values: list[float] = []
            for user in range(USERS):
                time.sleep(float(step_s))
                values.append(user_value(params, user))
                if study.report(number, sum(values) / len(values), user):
                    break
            pruned = len(values) < USERS
            write_json(folder / f"trial-{number}.json", None if pruned else sum(values) / len(values))

        trial_units = [f"gen-{generation}/trial-{number}" for number in numbers]
        store.register(JOB, [*trial_units, f"gen-{generation}/tell"])
        work_through(store, JOB, trial_units, settings, evaluate)

        def tell(unit: str, numbers: list[int] = numbers) -> None:
            for number in numbers:
                value = json.loads((folder / f"trial-{number}.json").read_text())
                study.tell(number, value, reason="pruned")

        work_through(store, JOB, [f"gen-{generation}/tell"], settings, tell)


if __name__ == "__main__":
    main(*sys.argv[1:])
