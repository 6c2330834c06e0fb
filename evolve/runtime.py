"""What an evolution run is made of before any generation: environment, users, split, seed policy, simulator.

Also the run-folder bookkeeping every protocol shares: claiming the folder (only once everything that
can be checked without an LLM call has been checked, so a bad config leaves no trace), the recorded
split, and the run's usage ledger (``usage.jsonl``, every call of every process of the run appended as it
is counted), so budgets and reported usage hold across ``--resume`` and equal what the endpoint served.
"""

from __future__ import annotations

import hashlib
import logging
import random
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from memevo.agents.base import MemoryAgent
from memevo.agents.llm.config import LLMConfig
from memevo.agents.llm.protocol import ChatClient, Role
from memevo.agents.policy import MemoryPolicy
from memevo.agents.registry import agent_spec, build_agent, validate_policy
from memevo.core.atomic_files import write_json_atomic
from memevo.core.errors import UserInputError, nested_in
from memevo.core.lazy_model import LazyModel
from memevo.core.run_files import read_or_recompute
from memevo.core.setting_names import given, setting
from memevo.environments.amemgym.data.models import Item
from memevo.environments.amemgym.environment import AMemGymEnvironment
from memevo.environments.amemgym.simulators.factory import make_simulator
from memevo.environments.metrics import (
    UPPER_BOUND_FILE,
    Scores,
    UpperBoundTable,
    UserScores,
)
from memevo.environments.protocol import Environment
from memevo.environments.registry import make_environment
from memevo.environments.rundir import LEDGER_FILE, UsageLedger, check_inputs, item_fingerprints
from memevo.environments.runner import EpisodeConfig
from memevo.environments.score_text import data_figure_key, data_figure_name
from memevo.environments.table_cache import cached_table
from memevo.evolve.candidates import Candidate
from memevo.evolve.config import DataConfig, EvolveConfig, check_judge, check_validation_users
from memevo.evolve.databases import (
    check_database_url,
    check_name,
    check_reachable,
    check_server,
    is_database,
    uri_scheme,
)
from memevo.evolve.deferred import Deferred, DeferredStart
from memevo.evolve.evaluation import Evaluator
from memevo.evolve.events import Observers, RunContext
from memevo.evolve.plugins import make_tracker, open_observers
from memevo.evolve.proposers import Proposer, ProposerSettings, make_proposer
from memevo.evolve.run_data import keep_data
from memevo.evolve.validation import LengthBounds

if TYPE_CHECKING:
    from memevo.evolve.tuner import Tuner


class Hub(Protocol):
    """What the loop needs from ``memevo.agents.llm.hub.LLMHub`` (a test double can stand in)."""

    accounting: Any

    def client(self, config: LLMConfig) -> ChatClient: ...

    def dspy_lm(self, config: LLMConfig, role: Role = "proposer") -> Any: ...


class Split(LazyModel):
    """Disjoint user ids per split, recorded in the run folder."""

    train: list[str]
    val: list[str]
    test: list[str]
    seed: int


def load_users(config: EvolveConfig, environment: Environment[Any] | None = None, data: DataConfig | None = None,
               field: str = "data") -> list[Any]:
    """The items of ``data`` (default: the config's) read by ``environment`` (default: AMemGym's), as the
    environment prepares them for a run (``Environment.prepared``: ``max_periods``/``max_questions``, checks)."""
    data = data or config.data
    environment = environment or AMemGymEnvironment(EpisodeConfig())
    source = f"{config.source or 'config'} ({field}.synth)"
    if data.path is not None:
        path = config.resolve_path(data.path)
        source = str(path) if path.exists() else data.path  # else a hub id
        items: list[Any] = environment.load_items(source)
    else:
        from memevo.environments.amemgym.synth import SynthConfig, synthesize

        try:
            synth = SynthConfig.model_validate(data.synth)
        except ValueError as error:
            raise UserInputError(str(error), source=str(config.source or ""), field=f"{field}.synth") from None
        items = synthesize(synth)
    if data.limit:
        items = items[: data.limit]
    return environment.prepared(items, max_periods=config.episode.max_periods,
                                max_questions=config.episode.max_questions, source=source)


def data_hash(items: Sequence[Any]) -> str:
    digest = hashlib.sha256()
    for item in items:
        digest.update(item.model_dump_json().encode())
    return digest.hexdigest()[:16]


def make_split(items: Sequence[Any], config: EvolveConfig, environment: Environment[Any] | None = None) -> Split:
    """A seeded shuffle of the items' ids (any environment's, AMemGym's by default) cut into train/val/test; each
    split the protocol uses gets at least one user."""
    ids = [item.id if environment is None else environment.item_id(item) for item in items]
    if len(set(ids)) != len(ids):
        raise UserInputError("item ids must be unique", source=str(config.data.path or config.source), field="data")
    source = str(config.source) if config.source else None
    n_train, n_val, n_test = config.split.counts(len(ids), config.required_splits, source=source)
    check_validation_users(config, n_val, source=source)
    order = sorted(ids)
    random.Random(config.split.seed).shuffle(order)
    return Split(
        train=order[:n_train],
        val=order[n_train : n_train + n_val],
        test=order[n_train + n_val : n_train + n_val + n_test],
        seed=config.split.seed,
    )


def check_stores(config: EvolveConfig, run_dir: Path) -> None:
    """The run's name, tracker, its store (``Tracker.check_store``) and Optuna storage, checked before anything is
    written or called, and those on a database server reached; the default stores lie in the run folder, which
    ``claim_run_folder`` checked."""
    source = str(config.source or "config")
    check_name(config.name, source=source)
    tracking = config.tracking
    tracker = make_tracker(tracking.tracker, source=source)
    if tracking.enabled:
        tracker.check_store(tracking.uri, tracking.experiment or config.name, run_dir, source=source,
                            store_field="tracking.uri",
                            experiment_field="tracking.experiment" if tracking.experiment else "name")
        if tracking.uri and is_database(uri_scheme(tracking.uri)):
            check_reachable(tracking.uri, source=source, field="tracking.uri")
        elif tracking.uri and uri_scheme(tracking.uri) in ("http", "https"):
            check_server(tracking.uri, source=source, field="tracking.uri")
    if config.optuna.storage:
        check_database_url(config.optuna.storage, source=source, field="optuna.storage")
        check_reachable(config.optuna.storage, source=source, field="optuna.storage")


def claim_run_dir(run_dir: Path, config: EvolveConfig, resume: bool, inputs: dict[str, Any]) -> None:
    """Mark ``run_dir`` as this config's run (a run's first write); a resume needs the same ``inputs``
    (config, data content, seed policy), else it stops naming every changed field.

    ``resume`` on a folder that holds no run yet simply starts one, so a command can always pass it.
    """
    marker = run_dir / "config.json"
    if marker.exists() and not resume:
        raise UserInputError(f"already holds a run; pass {given('resume')} to continue it or choose another "
                             f"{setting('run_dir')}", source=str(run_dir), field=setting("run_dir"))
    run_dir.mkdir(parents=True, exist_ok=True)
    # a run recorded without a judge judged nothing (a judged answer without one stops the run), so a judge added on
    # resume changes no recorded result
    check_inputs(run_dir, inputs, may_add=("config.llm.judge",))
    write_json_atomic(marker, config.hash_payload())


def recorded_split(run_dir: Path, fresh: Split) -> Split:
    """The split saved in the run folder (a resume must use the same users), else ``fresh`` saved now."""
    path = run_dir / "split.json"
    stored = read_or_recompute(path, Split)  # a damaged one is the fresh one again: the inputs are checked the same
    if stored is not None:
        if stored != fresh:
            raise UserInputError("the data or split changed since this run started", source=str(path), field="split")
        return stored
    write_json_atomic(path, fresh.model_dump())
    return fresh


def seed_policy(config: EvolveConfig) -> MemoryPolicy:
    """The seed candidate with the config's agent LLM applied; its components must exist."""
    if config.seed.policy_file is not None:
        from memevo.agents.config_file import load_policy

        policy = load_policy(config.resolve_path(config.seed.policy_file))
    else:
        assert config.seed.policy is not None
        policy = config.seed.policy
        with nested_in("seed.policy", source=str(config.source or "")):
            validate_policy(policy)
    if config.llm.agent is not None:
        policy = policy.model_copy(update={"llm": config.llm.agent})
    spec = agent_spec(policy.kind)
    for index, name in enumerate(config.components):
        try:
            spec.component(name)
        except KeyError as error:
            raise UserInputError(str(error.args[0]), source=str(config.source or ""), field=f"components.{index}") from None
    for name in config.hyperparameters:
        if name not in spec.hyperparameters:
            raise UserInputError(
                f"agent kind '{policy.kind}' does not use {name} (it uses {list(spec.hyperparameters)})",
                source=str(config.source or ""),
                field=f"hyperparameters.{name}",
            )
    return policy


def agent_factory(client: Callable[[LLMConfig], ChatClient]) -> Callable[[MemoryPolicy], MemoryAgent]:
    def make(policy: MemoryPolicy) -> MemoryAgent:
        return build_agent(policy, client(policy.llm))

    return make


def endpoint_width(client: ChatClient, config: LLMConfig) -> int:
    """How many requests ``client``'s endpoints take at once: the gateway's width (the tightest setting on each
    endpoint, summed), else what ``config`` asks for (a test double has no limit)."""
    width = getattr(client, "width", None)
    return width if isinstance(width, int) else config.concurrency(embedded=False)


def make_run_environment(config: EvolveConfig, episode: EpisodeConfig, judge: ChatClient | None,
                         name: str | None = None, field: str = "environment",
                         data: DataConfig | None = None) -> Environment[Any]:
    """The environment ``name`` (default: the config's) with the run's episode settings and judge, and the
    settings ``data`` (default: the config's) gives it."""
    return make_environment(name or config.environment, episode, judge=judge, field=field,
                            options=(data or config.data).environment_options())


def read_users(config: EvolveConfig) -> tuple[list[Any], list[Any]]:
    """The users of the config's data and of its test environment's (none without one), read by environments
    without a judge or an endpoint, so bad data stops a run before any client starts; each set checked against
    ``llm.judge``, and its readers' warnings logged. The environments that play them are made later, with the
    run's judge: an item holds everything its scoring reads."""
    test = config.test_environment
    sections = [(config.environment, config.data, "data", "environment")]
    if test is not None:
        sections.append((test.environment, test.data, "test_environment.data", "test_environment.environment"))
    loaded = []
    for name, data, field, name_field in sections:
        reader = make_run_environment(config, EpisodeConfig(), None, name, field=name_field, data=data)
        users = load_users(config, reader, data, field=field)
        for warning in getattr(reader, "load_warnings", []):
            logging.getLogger("memevo.evolve").warning("%s: %s", field, warning)
        check_judge(config, reader, users, field)
        loaded.append(users)
    return loaded[0], loaded[1] if test is not None else []


def make_proposers(hub: Hub, config: EvolveConfig) -> list[Proposer]:
    """The proposers of ``config.strategy.proposers``, speaking to the proposer LLM through DSPy."""
    settings = ProposerSettings(lm=hub.dspy_lm(config.llm.proposer, role="proposer"), adapter=config.proposer_adapter)
    return [make_proposer(name, settings) for name in config.strategy.proposers]


def episode_config(config: EvolveConfig, policy: MemoryPolicy, width: int | None = None) -> EpisodeConfig:
    """The episode protocol of ``config``; ``width`` (the endpoint's) sets the users at once unless
    ``episode.user_concurrency`` does."""
    return EpisodeConfig(
        rounds_init=config.episode.rounds_init,
        rounds_update=config.episode.rounds_update,
        diagnose=config.episode.diagnose,
        amemgym_compat=policy.amemgym_compat,
        constrained_answers=config.episode.constrained_answers,
        answer_mode=config.episode.answer_mode,
        max_concurrent_users=config.episode.user_concurrency or width or 1,
        seed=config.split.seed,
    )


class RunBase:
    """What every protocol builds first: users, recorded split, seed, evaluator, proposer, usage ledger.

    Everything that can be checked without an LLM call (data, the split against the data, agent kind,
    components, LLM endpoints) is checked before the run folder is claimed: a failed start writes nothing.
    """

    def __init__(self, config: EvolveConfig, run_dir: Path, hub: Hub, *, resume: bool) -> None:
        self.config = config
        self.run_dir = run_dir
        self.hub = hub
        check_stores(config, run_dir)
        self.seed = Candidate(policy=seed_policy(config), origin="seed")
        self.users, test_users = read_users(config)  # before the first client, which may start the embedded model
        self.clients: dict[LLMConfig, ChatClient] = {}
        self.client(self.seed.policy.llm)
        judge = self.client(config.llm.judge) if config.llm.judge is not None else None
        episode = episode_config(config, self.seed.policy,
                                 endpoint_width(self.client(self.seed.policy.llm), self.seed.policy.llm))
        self.environment = make_run_environment(config, episode, judge)
        self.items = {self.environment.item_id(item): item for item in self.users}
        self.figure = data_figure_name(self.environment, self.users)
        """What the run's lines call its headline figure, decided once from every question of its data."""
        self.figure_key = data_figure_key(self.environment, self.users)
        """What its metric names (MLflow's, Optuna's) call it."""
        fresh_split = make_split(self.users, config, self.environment)
        test = config.test_environment
        self.test_environment = None if test is None else make_run_environment(
            config, episode, judge, test.environment, field="test_environment.environment", data=test.data)
        simulator_llm = self.client(config.llm.simulator) if config.llm.simulator and config.episode.simulator == "llm" else None
        simulator = make_simulator(config.episode.simulator, config.split.seed, simulator_llm,
                                   amemgym_compat=self.seed.policy.amemgym_compat)
        self.client(config.llm.proposer)  # its endpoint is checked now; DSPy loads after the first request
        self.bounds = LengthBounds(min_ratio=config.min_length_ratio, max_ratio=config.max_length_ratio)

        inputs = {"config": config.identity_payload(), "data": item_fingerprints(self.users),
                  "seed_policy": self.seed.policy.model_dump(mode="json")}
        if test_users:
            inputs["test_environment_data"] = item_fingerprints(test_users)
        claim_run_dir(run_dir, config, resume, inputs)
        self.data_hash = data_hash(self.users)
        keep_data(run_dir, config, self.users, data_hash=self.data_hash)
        self.split = recorded_split(run_dir, fresh_split)
        self.usage = UsageLedger(run_dir / LEDGER_FILE)
        hub.accounting.attach(self.usage)  # detached by ``close``: an ablation's next run keeps its own ledger
        self.evaluator = Evaluator(
            root=run_dir,
            items=self.users,
            make_agent=agent_factory(self.client),
            simulator=simulator,
            episode_config=episode,
            objective=config.objective,
            environment=self.environment,
        )
        self.cross_evaluator = None if self.test_environment is None else Evaluator(
            root=run_dir, items=test_users, make_agent=agent_factory(self.client), simulator=simulator,
            episode_config=episode, objective=config.objective, environment=self.test_environment)
        self.start_later = DeferredStart()  # what the first request does not need: see ``observers`` and ``proposers``
        self.deferred_tuner = self.make_tuner()
        self.observers = Observers()
        """The run's observers (``memevo.evolve.plugins``): the tracker's store opens once the first requests are in
        flight."""
        open_observers(self.observers, RunContext(
            config=config, run_dir=run_dir, split=self.split, seed=self.seed, spec=agent_spec(self.seed.policy.kind),
            start_later=self.start_later, figure=self.figure, figure_key=self.figure_key,
            data_hash=self.data_hash))
        self._proposers = self.start_later.defer(partial(make_proposers, hub, config))
        self.start_later.watch(hub.accounting)

    def make_tuner(self) -> Deferred[Tuner] | None:
        """The Optuna study a protocol asks for hyperparameters (deferred: ``start_later``), None when it asks for
        none."""
        return None

    @property
    def proposers(self) -> list[Proposer]:
        """The configured proposers; DSPy is imported in the start-up thread once the first requests are in flight,
        and the first proposal waits for it."""
        return self._proposers.result()

    async def upper_bound_table(self, items: Sequence[Item]) -> UpperBoundTable | None:
        """The upper-bound table on ``items`` (computed once per run folder), None when the config switches
        it off. The evaluator scores memory against it from now on."""
        if not self.config.upper_bound or not self.environment.capabilities.upper_bound:
            return None
        policy = self.seed.policy
        table = await cached_table(
            UpperBoundTable, self.client(policy.llm), items, self.run_dir / UPPER_BOUND_FILE,
            self.evaluator.episode_config, model=policy.llm.model,
        )
        self.evaluator.upper_bound = table
        return table

    def scores(self, candidate_id: str, split: str, user_ids: Sequence[str]) -> tuple[Scores, list[UserScores]]:
        """Scores of finished episodes that must exist (a finished evaluation of these users)."""
        scored = self.evaluator.scores(candidate_id, split, user_ids)
        assert scored is not None, f"{candidate_id} has no finished {split} episodes"
        return scored

    def client(self, config: LLMConfig) -> ChatClient:
        """The hub's client for ``config``, remembered so ``close`` can release it."""
        if config not in self.clients:
            self.clients[config] = self.hub.client(config)
        return self.clients[config]

    async def close(self) -> None:
        """Stop counting into this run's ledger, and close this event loop's connections before
        ``asyncio.run`` closes the loop under them."""
        self.hub.accounting.detach(self.usage)
        self.start_later.stop_watching()
        self.start_later.join()
        self.usage.close()
        for client in self.clients.values():
            close = getattr(client, "aclose", None)
            if close is not None:
                await close()
