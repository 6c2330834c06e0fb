"""The hyperparameter tuner: an Optuna study driven ask-and-tell by the loop.

Determinism across a crash: every parameter of every trial is drawn by a sampler seeded with (seed,
trial number, parameter name), so a draw does not depend on what this process drew before. A generation's
trials are all asked before any is told, and trials a killed process asked for a plan it never saved are
handed out again in the same order (``reuse_from``) instead of new ones, so a resumed run ends with the same
trial numbers and values as an uninterrupted one, without a failed trial. Trials are told at the end of
their generation, so a pruning decision only compares against earlier generations and does not depend on
which candidate finished first.

The study's one value is the run's objective (``accuracy`` or ``memory_score``, named as the study's
metric) on the train users; each trial also carries its candidate id and, when it reached validation,
``val_<objective>``, the value memevo's selection used, so Optuna's view and memevo's agree on names.

The tuner tells its own trials (``close_generation``), after the generation's observers had its end: each trial's
attributes then link to its candidate's tracker run, and no observer's place in the order matters.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from memevo.core.errors import DamagedFileError
from memevo.core.setting_names import setting
from memevo.evolve.candidates import Candidate
from memevo.evolve.config import IntRange, OptunaConfig
from memevo.evolve.databases import damaged_database, sqlite_file
from memevo.evolve.evaluation import CandidateEval
from memevo.evolve.events import GenerationEnded

optuna.logging.set_verbosity(optuna.logging.WARNING)


def restore_optuna() -> str:
    """What to do about a damaged or missing study, the run folder named as the caller's front end names it."""
    return ("restore it from a copy: its trials hold the hyperparameters of the run's candidates, so the run cannot be "
            f"resumed without it (start again in a new {setting('run_dir')})")


DECISION_ATTR = "decision"
"""The user attribute that says what memevo did with a trial's candidate (why a trial without a value has none)."""
PRUNED_AFTER_ATTR = "pruned_after_users"
"""Set when the pruner stopped the trial: after how many train users."""
REPEATED = "not run: the proposal repeated a known policy"
"""The decision of a trial whose proposal repeated a known policy (closed unrun)."""


def trial_attributes(*, candidate_id: str, label: str, generation: int, objective: str, val_score: float | None,
                     links: Mapping[str, str], kept: bool, decision: str) -> dict[str, Any]:
    """Optuna user attributes of a candidate's trial.

    The trial's value is the ``objective`` on the *training* users (the study's metric is named after
    it), told only for candidates the generation kept or accepted; memevo selects on *validation*.
    So Optuna's "best trial" is one memevo accepted but can differ from memevo's best: ``kept``, ``decision`` and ``val_<objective>`` say
    which trial memevo kept; ``decision`` is the one its tracker run shows (``decisions.candidate_decision``);
    ``links`` lead to that run (the MLflow tracker's: ``mlflow_run_id``).
    """
    attrs: dict[str, Any] = {"candidate_id": candidate_id, "candidate": label, "generation": generation,
                             "kept": kept, "decision": decision}
    if val_score is not None:
        attrs[f"val_{objective}"] = round(val_score, 4)  # as the decision and the tracker's tags show it
    return attrs | dict(links)


def draw_seed(seed: int, number: int, name: str) -> int:
    """The seed of one parameter's draw in one trial (stable across processes)."""
    return int.from_bytes(hashlib.sha256(f"{seed}/{number}/{name}".encode()).digest()[:4], "big")


def make_sampler(config: OptunaConfig, seed: int) -> optuna.samplers.BaseSampler:
    if config.sampler == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    return optuna.samplers.TPESampler(seed=seed, n_startup_trials=3)


def study_storage(url: str) -> str | optuna.storages.RDBStorage:
    """Where the study lives. An SQLite file: its URL, opened by Optuna. A database server (workers of a sweep on
    several machines): Optuna's RDB storage, its pooled connections checked before use, because a worker holds
    them across a whole generation and the server or a proxy may close idle ones meanwhile. No Optuna heartbeat:
    a trial stays running until its generation ends, and a worker's hold on it is the claim's heartbeat
    (``memevo.evolve.workers.claims``), which resumes a dead worker's trial under its own number."""
    if url.startswith("sqlite"):
        return url
    return optuna.storages.RDBStorage(url, engine_kwargs={"pool_pre_ping": True})


def make_pruner(config: OptunaConfig) -> optuna.pruners.BasePruner:
    if config.pruner == "median":
        return optuna.pruners.MedianPruner(
            n_startup_trials=config.n_startup_trials, n_warmup_steps=config.n_warmup_steps
        )
    if config.pruner == "wilcoxon":
        return optuna.pruners.WilcoxonPruner(p_threshold=config.p_threshold)
    return optuna.pruners.NopPruner()


class Tuner:
    """Suggests ``update_every``/``short_term``/``top_k`` for candidates and prunes weak evaluations."""

    def __init__(
        self,
        config: OptunaConfig,
        space: dict[str, IntRange],
        *,
        storage: str,
        study_name: str,
        first_trial: dict[str, int],
        metric: str = "objective",
    ) -> None:
        self.config = config
        self.metric = metric
        self.space = space
        self.storage = storage
        self.study_name = study_name
        self.study = self._load()
        self._next = 0
        if not self.study.get_trials(deepcopy=False):
            enqueued = {name: value for name, value in first_trial.items() if name in space and space[name].contains(value)}
            self.study.enqueue_trial(enqueued, skip_if_exists=True)

    def _load(self) -> optuna.Study:
        database = sqlite_file(self.storage)
        with damaged_database(database, restore_optuna()) if database is not None else nullcontext():
            study = optuna.create_study(
                study_name=self.study_name,
                storage=study_storage(self.storage),
                direction="maximize",
                sampler=make_sampler(self.config, self.config.seed),
                pruner=make_pruner(self.config),
                load_if_exists=True,
            )
        if study.metric_names != [self.metric]:
            with warnings.catch_warnings():  # experimental since Optuna 3.2, stable in use since
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                study.set_metric_names([self.metric])  # the run's objective, named in dashboards and exports
        return study

    def next_number(self) -> int:
        """The number the next new trial would get."""
        return len(self.study.get_trials(deepcopy=False))

    def reuse_from(self, number: int) -> None:
        """Hand out trials from ``number`` on: ones that exist already (asked by a killed process for the plan
        being made again) before new ones."""
        self._next = number

    def ask(self) -> tuple[int, dict[str, int]]:
        """The next trial (an existing one first, see ``reuse_from``): its number and hyperparameters."""
        number, self._next = self._next, self._next + 1
        trials = self.study.get_trials(deepcopy=False)
        if number < len(trials) and trials[number].state != TrialState.WAITING:
            if trials[number].state.is_finished():
                return number, {name: int(value) for name, value in trials[number].params.items()}
            trial = self._trial(number)
        else:
            trial = self.study.ask()
            assert trial.number == number, f"trial {trial.number} asked where {number} was expected"
        params: dict[str, int] = {}
        for name, domain in self.space.items():
            self.study.sampler = make_sampler(self.config, draw_seed(self.config.seed, number, name))
            if domain.choices is not None:
                params[name] = int(trial.suggest_categorical(name, domain.choices))
            else:
                assert domain.low is not None and domain.high is not None
                params[name] = trial.suggest_int(name, domain.low, domain.high, step=domain.step)
        return number, params

    def seed_trial(self) -> int:
        """The number of the enqueued first trial (asked now unless an earlier process already did)."""
        self.reuse_from(0)
        return self.ask()[0]

    def _frozen(self, number: int) -> FrozenTrial:
        """The stored trial, not copied (``study.trials`` deep-copies every trial on each access); one the run gave
        a candidate but the study lacks (its database deleted or replaced) ends the run in one line."""
        trials = self.study.get_trials(deepcopy=False)
        if number >= len(trials):
            raise DamagedFileError(f"the Optuna study '{self.study_name}' has no trial {number}, which a candidate of "
                                   "this run was given (the database was deleted or replaced)",
                                   source=str(sqlite_file(self.storage) or self.storage), remedy=restore_optuna())
        return trials[number]

    def _trial(self, number: int) -> optuna.Trial:
        return optuna.Trial(self.study, self._frozen(number)._trial_id)

    def uses_per_user_values(self) -> bool:
        """Wilcoxon compares per-user values; the median pruner compares running means."""
        return self.config.pruner == "wilcoxon"

    def report(self, number: int, value: float, step: int) -> bool:
        """Record an intermediate value; True when the trial should stop now (noted on the trial: its reason)."""
        trial = self._trial(number)
        trial.report(value, step)
        if trial.should_prune():
            trial.set_user_attr(PRUNED_AFTER_ATTR, step + 1)
            return True
        return False

    def annotate(self, number: int, **attributes: Any) -> None:
        """User attributes on a trial still running (a resumed run may find it finished: then nothing)."""
        if self._frozen(number).state != TrialState.RUNNING:
            return
        trial = self._trial(number)
        for key, value in attributes.items():
            trial.set_user_attr(key, value)

    def tell(self, number: int, value: float | None, *, reason: str | None = None, ran: bool = True) -> None:
        """Finish a trial (idempotent, so a resumed generation can re-tell safely). A trial without a value that ran
        is PRUNED in Optuna's terms (the sampler then knows it as a weak point), one that never ran FAIL (nothing was
        measured: the sampler ignores it, and no dashboard shows it as pruned); the caller says why (``reason``, the
        trial's ``DECISION_ATTR``): the loop knows, the trial's attributes do not always."""
        frozen = self._frozen(number)
        if frozen.state != TrialState.RUNNING:
            return
        if value is None:
            assert reason, f"trial {number} is told without a value and without a reason"
            self._trial(number).set_user_attr(DECISION_ATTR, reason)
            self.study.tell(number, state=TrialState.PRUNED if ran else TrialState.FAIL)
        else:
            self.study.tell(number, value)

    def repeated(self, number: int) -> None:
        """Close the trial of a proposal that repeated a known policy: it is not run."""
        self.tell(number, None, reason=REPEATED, ran=False)

    def close_generation(self, event: GenerationEnded, links: Callable[[int, str], Mapping[str, str]]) -> None:
        """Tell the generation's trials from its decisions (``event.decisions``, the words its tracker
        runs show): a kept or accepted candidate with the objective on the train users it was run on; a rejected or
        pruned one without a value (PRUNED, so a rejected candidate is never the study's best trial); one never run
        FAIL. Each first gets its attributes (Optuna refuses to change a finished trial), among them
        ``links(generation, label)`` to the candidate's tracker run, which the observers logged before."""
        runs: list[tuple[Candidate, CandidateEval | None, CandidateEval | None]]
        runs = [(candidate, None, None) for candidate in event.never_run]
        runs += [(candidate, run.val, run.train_check) for candidate, run in event.ran]
        for candidate, val, check in runs:
            assert candidate.trial_number is not None
            decision = event.decisions.of(candidate.id)
            self.annotate(candidate.trial_number, **trial_attributes(
                candidate_id=candidate.id, label=candidate.label, generation=candidate.generation,
                objective=self.metric, val_score=val.score if val is not None else None,
                links=links(candidate.generation, candidate.label), kept=decision.state == "kept",
                decision=decision.text))
            passed = check is not None and not check.pruned and decision.state in ("kept", "accepted")
            self.tell(candidate.trial_number, check.score if passed and check else None, reason=decision.text,
                      ran=decision.state != "not_run")

    def summary(self) -> dict[str, Any]:
        states = [trial.state.name for trial in self.study.get_trials(deepcopy=False)]
        return {state: states.count(state) for state in sorted(set(states))}
