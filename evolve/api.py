"""memevo from Python: evaluate a memory agent and evolve its prompts from objects or files, results as records.

A notebook passes what it holds: a ``MemoryPolicy`` (or a policy file), its own ``MemoryAgent`` subclass, a list
of ``Item`` users (or a data file, folder or hub id) and an ``EvolveConfig`` (or a mapping, or a YAML file).
Both calls run what the command line runs (``environments.evaluate`` as ``memevo eval`` does; ``run_evolution`` as
``memevo evolve`` does) in a run folder that can be resumed from either side, and return typed results. Objects given are saved in the run folder
(``python-inputs/``, named by content), because a run and its resume read their inputs from files.

The shape follows the optimizers researchers know: GEPA's ``optimize(seed_candidate, trainset, valset, adapter)``
and MLflow's ``optimize_prompts``. memevo takes one list of users and splits it by ``config.split`` (seeded, and
recorded in the run folder) rather than a train and a validation set, since test users are held out too.
"""

from __future__ import annotations

import functools
import json
import signal
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from contextvars import copy_context
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from memevo.agents.base import MemoryAgent
from memevo.agents.llm.accounting import RoleUsage, UsageReport
from memevo.agents.policy import MemoryPolicy
from memevo.agents.registry import agent_spec, register_agent, validate_policy
from memevo.core.atomic_files import write_json_atomic
from memevo.core.errors import UserInputError
from memevo.core.lazy_model import LazyModel
from memevo.core.setting_names import PYTHON, spelled_for
from memevo.environments.amemgym.data.io import save_items
from memevo.environments.amemgym.data.models import Item
from memevo.environments.amemgym.data.validate import check_runnable
from memevo.environments.eval_run import DEFAULT_SIMULATOR, EvalReport, EvalRequest, SimulatorName
from memevo.environments.evaluate import evaluate as run_evaluation
from memevo.environments.metrics import Scores, UserScores
from memevo.environments.registry import DEFAULT_ENVIRONMENT
from memevo.environments.resume import resumable_as
from memevo.environments.rundir import claim_run_folder
from memevo.environments.stop_switch import StopSwitch
from memevo.evolve import api_arguments as checks
from memevo.evolve.api_outcomes import CandidateRow, candidate_rows, paired_on_test_users, run_candidates
from memevo.evolve.api_summary import summary_lines, summary_markdown
from memevo.evolve.candidates import Candidate
from memevo.evolve.config import DataConfig, EvolveConfig, SeedConfig, load_evolve_config, parse_evolve_config
from memevo.evolve.plugins import make_tracker
from memevo.evolve.presentation.progress import show_progress
from memevo.evolve.records import EvolutionResult, GenerationOutcome, read_record
from memevo.evolve.runtime import data_hash
from memevo.evolve.stats import PairedTest

__all__ = ["EvaluationResult", "MLflowIds", "OptimizationResult", "evaluate", "optimize"]

INPUTS_FOLDER = "python-inputs"
"""Where a run folder keeps the objects a Python caller passed, as files its run and a resume read."""
T = TypeVar("T")
P = ParamSpec("P")
PolicyInput = MemoryPolicy | str | Path
DataInput = Sequence[Item] | str | Path
ConfigInput = EvolveConfig | Mapping[str, Any] | str | Path


class EvaluationResult(LazyModel):
    """What ``evaluate`` measured: overall and per-user scores, the policy evaluated, the spend and the files."""

    policy: MemoryPolicy
    scores: Scores
    user_scores: list[UserScores]
    usage: RoleUsage
    out: Path
    """The output folder (``summary.json``, ``questions.csv``, ``periods.png``, ``run/``)."""


class MLflowIds(LazyModel):
    """Where an evolution is in MLflow: open it with ``memevo ui --run-dir <run_dir>`` or ``MlflowClient(uri)``."""

    tracking_uri: str
    experiment: str
    parent_run_id: str
    candidate_run_ids: dict[str, str]
    """Candidate label (``g1c0-1a2b3c4d``) to its MLflow run id."""


class OptimizationResult(LazyModel):
    """What ``optimize`` found: the best policy and the seed, their held-out scores, every candidate proposed
    with its fate per generation, the spend, the run folder and the MLflow ids."""

    best_policy: MemoryPolicy
    """The best candidate's policy with the text of every prompt component it runs (defaults included)."""
    seed: Candidate
    best: Candidate
    seed_test_scores: Scores
    best_test_scores: Scores
    seed_test_user_scores: list[UserScores]
    best_test_user_scores: list[UserScores]
    test_comparison: PairedTest
    """Best minus seed on the test users' objective, paired by user (mean difference, interval, p-values)."""
    candidates: list[Candidate]
    candidate_rows: list[CandidateRow]
    """Per candidate: its train and validation scores, its cost and its generation's decision about it, as the
    generation's ``decisions.json`` records it (the words the terminal, MLflow and Optuna show)."""
    generations: list[GenerationOutcome]
    stop_reason: str
    objective: str
    usage: UsageReport
    run_dir: Path
    mlflow: MLflowIds | None
    """None when the config switches tracking off."""

    def __str__(self) -> str:
        """Seed against best on the test users, the best one's changes, the cost and the MLflow command."""
        return "\n".join(summary_lines(self))

    def _repr_markdown_(self) -> str:
        """How a notebook shows the result: the same summary as a Markdown list."""
        return summary_markdown(self)


def _in_python_words(call: Callable[P, T]) -> Callable[P, T]:
    """``call`` with every setting its errors name spelled as a Python caller writes it (``run_dir``,
    ``resume=True``), not as the command line's flags: the checks deep inside are the command line's too."""

    @functools.wraps(call)
    def spelled(*args: P.args, **kwargs: P.kwargs) -> T:
        with spelled_for(PYTHON):
            return call(*args, **kwargs)

    return spelled


@_in_python_words
def evaluate(
    policy: PolicyInput | None,
    data: DataInput,
    *,
    out: str | Path,
    agent_class: type[MemoryAgent] | None = None,
    environment: str = DEFAULT_ENVIRONMENT,
    options: Mapping[str, str] | None = None,
    simulator: SimulatorName = DEFAULT_SIMULATOR,
    simulator_model: str | None = None,
    upper_bound: bool = False,
    no_memory_baseline: bool = False,
    diagnose: bool = False,
    users: int | None = None,
    concurrency: int | None = None,
    use_cache: bool = True,
    resume: bool = False,
    rounds_init: int = 1,
    rounds_update: int = 2,
    seed: int = 0,
) -> EvaluationResult:
    """Score ``policy`` (default: ``agent_class``'s kind with its default prompts) on the users of ``data``,
    as ``memevo eval`` does, into ``out``; bad input raises ``UserInputError`` naming the field. ``environment``
    names the benchmark ``data`` belongs to (``memevo env list``), ``options`` its own settings (``--env-option``).

    ``agent_class`` is registered under its ``spec.kind`` first, so a policy of that kind runs it. Interrupted
    (Ctrl-C, a notebook's stop button), the run stops within seconds keeping the periods it finished and raises
    ``Interrupted``; ``resume=True`` continues it."""
    checks.check_policy("policy", policy)
    checks.check_data("data", data)
    checks.check_folder("out", out)
    checks.check_agent_class(agent_class)
    checks.check_environment(environment, options, data)
    checks.check_simulator(simulator, simulator_model)
    checks.check_flags(upper_bound=upper_bound, no_memory_baseline=no_memory_baseline, diagnose=diagnose,
                       use_cache=use_cache, resume=resume)
    checks.check_count("users", users, least=1, optional=True)
    checks.check_count("concurrency", concurrency, least=1, optional=True)
    checks.check_count("rounds_init", rounds_init, least=1)
    checks.check_count("rounds_update", rounds_update, least=1)
    checks.check_count("seed", seed, least=0)
    chosen = _policy(policy, agent_class)
    folder = Path(out)
    given = _Inputs(folder)
    items = None if isinstance(data, str | Path) else given.checked(data)

    def run() -> EvalReport:
        from memevo.agents.config_file import load_policy

        with given.taken_back_if_refused():
            policy_file = Path(policy) if isinstance(policy, str | Path) else given.save_policy(chosen)
            data_source = str(data) if items is None else str(given.save_items(items))
            request = EvalRequest(
                policy=load_policy(policy_file), data=data_source, out=folder, environment=environment,
                options=dict(options or {}), resume=resume, users=users,
                use_cache=use_cache, concurrency=concurrency, seed=seed, upper_bound=upper_bound,
                no_memory_baseline=no_memory_baseline, diagnose=diagnose, simulator=simulator,
                simulator_model=simulator_model, rounds_init=rounds_init, rounds_update=rounds_update)
            return run_evaluation(request, resume_hint=resume_hint)

    resume_hint = f"memevo.evaluate(..., out={str(folder)!r}, resume=True) with the same arguments"
    report = _stoppable(run, resume_hint=resume_hint)
    return EvaluationResult(policy=chosen, scores=report.scores, user_scores=report.user_scores,
                            usage=report.usage.total(), out=folder)


@_in_python_words
def optimize(
    seed_candidate: PolicyInput | None,
    data: DataInput | None,
    *,
    run_dir: str | Path,
    config: ConfigInput | None = None,
    agent_class: type[MemoryAgent] | None = None,
    concurrency: int | None = None,
    use_cache: bool = True,
    resume: bool = False,
    progress: bool = True,
) -> OptimizationResult:
    """Evolve ``seed_candidate`` on the users of ``data`` as ``memevo evolve`` does, in ``run_dir``.

    ``config`` sets everything else (budget, split, components, strategy, models); the seed and the data given here
    replace its ``seed`` and ``data`` (None keeps the config's). ``agent_class`` is registered under its
    ``spec.kind`` first; without a seed, the seed is that kind with its default prompts. ``progress`` logs a line
    per step (logger ``memevo``, at INFO) and draws a bar per phase, as the command does. Interrupted (Ctrl-C, a
    notebook's stop button), the run stops within seconds and raises ``Interrupted``; ``resume=True`` continues it."""
    from memevo.agents.llm.hub import LLMHub
    from memevo.evolve.loop import run_evolution

    checks.check_policy("seed_candidate", seed_candidate)
    checks.check_data("data", data, optional=True)
    checks.check_folder("run_dir", run_dir)
    checks.check_config(config)
    checks.check_agent_class(agent_class)
    checks.check_count("concurrency", concurrency, least=1, optional=True)
    checks.check_flags(use_cache=use_cache, resume=resume, progress=progress)
    if progress:
        show_progress()
    folder = Path(run_dir)
    given = _Inputs(folder)
    items = None if data is None or isinstance(data, str | Path) else given.checked(data)
    data_file = given.items_path(items) if items is not None else _located(data) if isinstance(data, str | Path) else None
    settings = _settings(config, seed_candidate, data_file, agent_class)

    def run() -> EvolutionResult:
        with (resumable_as(resume_hint), claim_run_folder(folder, field="run_dir", kind="evolution"),
              given.taken_back_if_refused(), LLMHub(use_cache=use_cache, concurrency=concurrency) as hub):
            if items is not None:
                given.save_items(items)
            return run_evolution(settings, run_dir=folder, hub=hub, resume=resume)

    resume_hint = f"memevo.optimize(..., run_dir={str(folder)!r}, resume=True) with the same arguments"
    result = _stoppable(run, resume_hint=resume_hint)
    generations = [outcome for outcome in (read_record(path, GenerationOutcome)
                                           for path in sorted(folder.glob("generations/gen_*/outcome.json")))
                   if outcome is not None]
    candidates = run_candidates(folder, result.seed)
    return OptimizationResult(
        best_policy=_with_every_prompt(result.best.policy), seed=result.seed, best=result.best, seed_test_scores=result.seed_scores,
        best_test_scores=result.best_scores, seed_test_user_scores=result.seed_user_scores,
        best_test_user_scores=result.best_user_scores,
        test_comparison=paired_on_test_users(result.objective, result.seed_user_scores, result.best_user_scores),
        candidates=candidates, candidate_rows=candidate_rows(candidates, generations, folder), generations=generations,
        stop_reason=result.stop_reason, objective=result.objective, usage=result.usage, run_dir=folder,
        mlflow=_mlflow_ids(settings, folder))


def _policy(policy: PolicyInput | None, agent_class: type[MemoryAgent] | None) -> MemoryPolicy:
    """The policy asked for, after registering ``agent_class``; a file is read as the command line reads it."""
    if agent_class is not None:
        register_agent(agent_class.spec.kind)(agent_class)
    if policy is None:
        if agent_class is None:
            raise UserInputError("give a policy or an agent_class", field="policy")
        return MemoryPolicy(kind=agent_class.spec.kind)
    if isinstance(policy, str | Path):
        from memevo.agents.config_file import load_policy

        policy = load_policy(policy)
    else:
        validate_policy(policy)
    if agent_class is not None and policy.kind != agent_class.spec.kind:
        raise UserInputError(f"is '{policy.kind}', but agent_class {agent_class.__name__} is kind "
                             f"'{agent_class.spec.kind}'", field="policy.kind")
    return policy


def _with_every_prompt(policy: MemoryPolicy) -> MemoryPolicy:
    """``policy`` with the text of each prompt component it runs, its kind's default where it sets none: the seed's
    defaults may win, and a caller reading ``best_policy.prompts`` wants the prompt, not an empty mapping."""
    defaults = {component.name: component.default for component in agent_spec(policy.kind).components}
    return policy.with_prompts(**{**defaults, **policy.prompts})


def _located(data: str | Path) -> str:
    """A data file or folder as an absolute path (the config's own paths are relative to its file, not to the
    caller's working folder); anything else (a hub id) as given."""
    path = Path(data).expanduser()
    return str(path.resolve()) if path.exists() else str(data)


def _settings(config: ConfigInput | None, seed_candidate: PolicyInput | None, data: str | Path | None,
              agent_class: type[MemoryAgent] | None) -> EvolveConfig:
    """The evolution config with the seed and data given from Python in place, validated as a file would be."""
    if isinstance(config, str | Path):
        config = load_evolve_config(config)
    if isinstance(config, EvolveConfig):
        # only the fields the file or caller set: re-parsed, defaults would read as set (strategy.order with the
        # default sequential acceptance is refused when written in a file)
        payload, source = config.model_dump(mode="json", exclude={"source"}, exclude_unset=True), config.source
    else:
        payload, source = dict(config or {}), None
    if seed_candidate is not None or agent_class is not None:
        policy = _policy(seed_candidate, agent_class)
        payload["seed"] = SeedConfig(policy=policy).model_dump(mode="json", exclude_none=True)
    if data is not None:
        limit = (payload.get("data") or {}).get("limit")
        payload["data"] = DataConfig(path=str(data), limit=limit).model_dump(mode="json", exclude_none=True)
    for needed in ("seed", "data"):
        if needed not in payload:
            raise UserInputError(f"give {'a seed_candidate' if needed == 'seed' else 'data'} or a config with "
                                 f"'{needed}'", field=needed)
    return parse_evolve_config(payload, source=source)


class _Inputs:
    """The objects a caller passed, saved as files in ``<run folder>/python-inputs`` (named by content, so a resume
    with other data names another file). A start refused for bad input takes back the files and folders it made,
    as the command line's refused starts leave nothing behind."""

    def __init__(self, run_folder: Path) -> None:
        self.folder = run_folder / INPUTS_FOLDER
        self.written: list[Path] = []
        self.created: list[Path] = []

    @staticmethod
    def checked(items: Sequence[Item]) -> list[Item]:
        """``items`` if a run can use them, before anything is written."""
        if not all(isinstance(item, Item) for item in items):
            raise UserInputError("give a list of memevo.environments.amemgym.data.models.Item, or a data file",
                                 field="data")
        check_runnable(list(items), source="data")
        return list(items)

    def items_path(self, items: Sequence[Item]) -> Path:
        return (self.folder / f"items-{data_hash(items)}.json").resolve()

    def save_items(self, items: Sequence[Item]) -> Path:
        return self._save(self.items_path(items), lambda path: save_items(items, path))

    def save_policy(self, policy: MemoryPolicy) -> Path:
        return self._save(self.folder / f"policy-{policy.policy_id}.json",
                          lambda path: write_json_atomic(path, json.loads(policy.canonical_json())))

    def _save(self, path: Path, write: Callable[[Path], None]) -> Path:
        if not path.exists():
            self.created += [folder for folder in (self.folder, *self.folder.parents) if not folder.exists()]
            self.folder.mkdir(parents=True, exist_ok=True)
            write(path)
            self.written.append(path)
        return path

    @contextmanager
    def taken_back_if_refused(self) -> Iterator[None]:
        try:
            yield
        except UserInputError:
            for path in self.written:
                path.unlink(missing_ok=True)
            for folder in self.created:  # deepest first; one that holds something else stays
                try:
                    folder.rmdir()
                except OSError:
                    break
            raise


def _stoppable(work: Callable[[], T], *, resume_hint: str) -> T:
    """``work`` in a worker thread, the caller's thread waiting for it: there an interrupt (Ctrl-C, a notebook's
    stop, SIGTERM) arrives even while a notebook's event loop runs, stops the work's event loop (``StopSwitch``),
    waits the seconds its clean-up takes and is raised as ``Interrupted`` saying how to resume. The work's own errors
    are raised as it raised them (it runs under ``resumable_as`` itself)."""
    switch = StopSwitch()
    with (resumable_as(resume_hint), _interrupt_raises(),
          ThreadPoolExecutor(max_workers=1, thread_name_prefix="memevo-api") as worker):
        future = worker.submit(copy_context().run, switch.serve, work)
        try:
            wait([future])
        except BaseException:  # the caller was interrupted: the work goes on until stopped
            switch.stop()
            raise
    return future.result()


@contextmanager
def _interrupt_raises() -> Iterator[None]:
    """SIGINT raises ``KeyboardInterrupt`` in the waiting thread while the body runs. An event loop around the call
    (``asyncio.run``'s, a notebook's) installs a handler that cancels its own task, which cannot run while this
    call blocks: the interrupt would wait for the run's end."""
    if threading.current_thread() is not threading.main_thread():  # only the main thread receives signals
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _mlflow_ids(settings: EvolveConfig, folder: Path) -> MLflowIds | None:
    if not settings.tracking.enabled:
        return None
    tracker = make_tracker(settings.tracking.tracker)
    ids = tracker.run_ids(folder)
    if ids is None:
        return None
    parent, runs = ids
    return MLflowIds(tracking_uri=settings.tracking.uri or tracker.ui().default_store(folder),
                     experiment=settings.tracking.experiment or settings.name, parent_run_id=parent,
                     candidate_run_ids=runs)
