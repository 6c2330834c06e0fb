"""One worker of an evolution spread over several processes: the loop itself, with its units claimed.

Every worker runs the same loop on the same run folder (one machine, or a network folder every machine mounts
at the same path) and the same Optuna study. The units (``loop.OuterLoop.turns``): ``prepare`` (the run folder,
the study and its enqueued first trial, the MLflow ids; the others then open the run as a resume), ``gen-000``
(after the upper-bound table and each of the seed's users as units, ``user_units``), and per generation its
``plan`` (budget check, proposals and Optuna's asks), one unit per candidate and its ``outcome`` (decisions, MLflow
rows, trials told), then ``finish`` (after each test user of the seed and the best as a unit: test scores, the
run's end). Whoever holds a
unit tells the observers of it, so each MLflow row is written once; the others read its files. Trials are told
when their generation ends and every draw is seeded by (seed, trial number, name), so the trials, scores and
runs are those of one process. The race (``strategy.acceptance: sequential``, the default) shares each round's plays
instead (``strategies.race_units``); one candidate at a time (validation first with ``first_accepted``) has each
candidate's run and its check on the train users as units, one after the other.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from memevo.agents.llm.shared_usage import SharedUsage
from memevo.core.errors import UserInputError
from memevo.environments.resume import run_resumable
from memevo.evolve import runtime
from memevo.evolve.config import EvolveConfig
from memevo.evolve.loop import OuterLoop
from memevo.evolve.records import EvolutionResult
from memevo.evolve.workers.claims import ClaimStore
from memevo.evolve.workers.identity import run_identity
from memevo.evolve.workers.turns import SharedTurns
from memevo.evolve.workers.worker import WorkerSettings


def check_shareable(config: EvolveConfig, flag: str) -> None:
    """Refuse workers (``flag``: the option that asked for them) for a run whose work cannot be split into units: an
    evolution inside one episode, and speculative episodes played beside one process's own candidates."""
    source = str(config.source or "evolve config")
    why = f"{flag} runs a generation's candidates in several processes, but"
    if config.protocol != "outer_loop":
        raise UserInputError(f"{why} protocol {config.protocol} evolves inside one episode: use 1 worker",
                             source=source, field="protocol")
    if config.episode.speculate != "off":
        raise UserInputError(f"{why} speculative episodes are played beside one process's own candidates: set "
                             "episode.speculate: off, or use 1 worker", source=source, field="episode.speculate")


def evolution_job(config: EvolveConfig, run: str) -> str:
    """The claim store's name for this evolution: its run id (``identity``) and a hash of its config (a changed
    budget is a new job: its units are decided again, from the same files)."""
    digest = hashlib.sha256(json.dumps(config.hash_payload(), sort_keys=True).encode()).hexdigest()[:16]
    return f"evolve/{config.name}/{run}/{digest}"


def usage_job(config: EvolveConfig, run_dir: Path) -> str:
    """The shared ledger's name for this run: its name and folder, so a resume with a changed config (a larger
    budget) counts on from the same usage."""
    return f"evolve/{config.name}@{run_dir.resolve()}"


def shared_study(config: EvolveConfig, store: str) -> EvolveConfig:
    """The config with its Optuna study on the claim store's database server (workers on several machines), unless
    it names a storage; an SQLite claim store keeps the study in the run folder, as one process does."""
    if config.optuna.storage or store.startswith("sqlite"):
        return config
    return config.model_copy(update={"optuna": config.optuna.model_copy(update={"storage": store})})


def study_name(config: EvolveConfig, run: str) -> str:
    """The Optuna study of the run ``run``: a study on a shared server is this run's alone; one in the run folder
    keeps the name one process gives it."""
    return config.name if config.optuna.storage is None else f"{config.name}-{run}"


async def evolve_as_worker(config: EvolveConfig, *, run_dir: Path, hub: runtime.Hub, resume: bool,
                           settings: WorkerSettings) -> EvolutionResult:
    """Work on the evolution in ``run_dir`` with the other workers on ``settings.store`` until it has ended; the
    result (written once, by whichever worker scored it)."""
    run_id = run_identity(settings.store, config.name, Path(run_dir))
    usage = SharedUsage(settings.store, usage_job(config, Path(run_dir)), settings.name)
    turns = SharedTurns(ClaimStore(settings.store), evolution_job(config, run_id), settings,
                        slots=config.episode.candidate_concurrency or 1, settle=usage.flush)
    hub.accounting.attach(usage)
    try:
        async with turns.turn("prepare") as mine:
            run = OuterLoop(config, Path(run_dir), hub, resume=resume or not mine, turns=turns,
                            study_name=study_name(config, run_id))
            if mine:  # the study and its enqueued first trial, made once before any other worker opens it. (The
                # trackers open once each worker's first requests are in flight; the first tracking id noted in the
                # run folder is every worker's.)
                run.tuner  # noqa: B018
        run.budget.usage = usage  # the budget is every worker's, and so are the usage figures of the result
        try:
            return await run.run()
        finally:
            await run.close()
    finally:
        hub.accounting.detach(usage)
        usage.close()


def run_evolution_worker(config: EvolveConfig, *, run_dir: Path, hub: runtime.Hub, resume: bool,
                         settings: WorkerSettings) -> EvolutionResult:
    return run_resumable(evolve_as_worker(config, run_dir=run_dir, hub=hub, resume=resume, settings=settings))
