"""What an evolution run is made of before any generation: users, split, seed policy, simulator.

Also the run-folder bookkeeping every protocol shares: claiming the folder (only once everything that
can be checked without an LLM call has been checked, so a bad config leaves no trace), the recorded
split, and the spend carried over from earlier (killed) processes, so budgets and reported usage hold
across ``--resume``.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel

from memevo.agents.base import MemoryAgent
from memevo.agents.errors import UserInputError, nested_in
from memevo.agents.llm.accounting import RoleUsage, UsageReport
from memevo.agents.llm.config import LLMConfig
from memevo.agents.llm.protocol import ChatClient, Role
from memevo.agents.policy import MemoryPolicy
from memevo.agents.registry import agent_spec, build_agent, validate_policy
from memevo.environments.data.models import Item
from memevo.environments.data.validate import check_runnable
from memevo.environments.metrics import (
    UPPER_BOUND_FILE,
    Scores,
    UpperBoundTable,
    UserScores,
    compute_upper_bound,
    score_episodes,
    user_scores,
)
from memevo.environments.records import EpisodeResult
from memevo.environments.rundir import check_inputs, item_fingerprints
from memevo.environments.runner import EpisodeConfig
from memevo.environments.simulators.base import UserSimulator
from memevo.environments.store import write_json_atomic
from memevo.evolve.candidates import Candidate
from memevo.evolve.config import EvolveConfig
from memevo.evolve.evaluation import Evaluator
from memevo.evolve.proposer import Proposer
from memevo.evolve.tracking import Tracker, git_commit
from memevo.evolve.validation import LengthBounds


class Hub(Protocol):
    """What the loop needs from ``memevo.agents.llm.hub.LLMHub`` (a test double can stand in)."""

    accounting: Any

    def client(self, config: LLMConfig) -> ChatClient: ...

    def dspy_lm(self, config: LLMConfig, role: Role = "proposer") -> Any: ...


class Split(BaseModel):
    """Disjoint user ids per split, recorded in the run folder."""

    train: list[str]
    val: list[str]
    test: list[str]
    seed: int


def load_users(config: EvolveConfig) -> list[Item]:
    """The configured items, truncated to ``max_periods``/``max_questions`` when asked."""
    if config.data.path is not None:
        from memevo.environments.data.io import load_items

        path = config.resolve_path(config.data.path)
        items = load_items(path if path.exists() else config.data.path)
    else:
        from memevo.environments.synth import SynthConfig, synthesize

        try:
            synth = SynthConfig.model_validate(config.data.synth)
        except ValueError as error:
            raise UserInputError(str(error), source=str(config.source or ""), field="data.synth") from None
        items = synthesize(synth)
    if config.data.limit:
        items = items[: config.data.limit]
    items = [truncate(item, config.episode.max_periods, config.episode.max_questions) for item in items]
    check_runnable(items, source=str(config.data.path or f"{config.source or 'config'} (data.synth)"))
    return items


def truncate(item: Item, max_periods: int | None, max_questions: int | None) -> Item:
    update: dict[str, Any] = {}
    if max_periods is not None:
        update["periods"] = item.periods[:max_periods]
    if max_questions is not None:
        update["qas"] = item.qas[:max_questions]
    return item.model_copy(update=update) if update else item


def data_hash(items: Sequence[Item]) -> str:
    digest = hashlib.sha256()
    for item in items:
        digest.update(item.model_dump_json().encode())
    return digest.hexdigest()[:16]


def make_split(items: Sequence[Item], config: EvolveConfig) -> Split:
    """A seeded shuffle cut into train/val/test; each split the protocol uses gets at least one user."""
    ids = [item.id for item in items]
    if len(set(ids)) != len(ids):
        raise UserInputError("item ids must be unique", field="data")
    source = str(config.source) if config.source else None
    n_train, n_val, n_test = config.split.counts(len(ids), config.required_splits, source=source)
    order = sorted(ids)
    random.Random(config.split.seed).shuffle(order)
    return Split(
        train=order[:n_train],
        val=order[n_train : n_train + n_val],
        test=order[n_train + n_val : n_train + n_val + n_test],
        seed=config.split.seed,
    )


def claim_run_dir(run_dir: Path, config: EvolveConfig, resume: bool, inputs: dict[str, Any]) -> None:
    """Mark ``run_dir`` as this config's run (a run's first write); a resume needs the same ``inputs``
    (config, data content, seed policy), else it stops naming every changed field.

    ``resume`` on a folder that holds no run yet simply starts one, so a command can always pass it.
    """
    marker = run_dir / "config.json"
    if marker.exists() and not resume:
        raise UserInputError(f"run folder {run_dir} already holds a run; pass --resume or choose another --run-dir",
                             field="run_dir")
    run_dir.mkdir(parents=True, exist_ok=True)
    check_inputs(run_dir, inputs)
    write_json_atomic(marker, config.hash_payload())


def recorded_split(run_dir: Path, fresh: Split) -> Split:
    """The split saved in the run folder (a resume must use the same users), else ``fresh`` saved now."""
    path = run_dir / "split.json"
    if path.exists():
        stored = Split.model_validate_json(path.read_text(encoding="utf-8"))
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


def make_simulator(config: EvolveConfig, client: Callable[[LLMConfig], ChatClient]) -> UserSimulator:
    if config.episode.simulator == "llm":
        from memevo.environments.simulators.llm import LLMUserSimulator

        assert config.llm.simulator is not None
        compat = config.seed.policy is not None and config.seed.policy.amemgym_compat
        return LLMUserSimulator(client(config.llm.simulator), current_date="period_end" if compat else "session")
    from memevo.environments.simulators.template import TemplateUserSimulator

    return TemplateUserSimulator()


def agent_factory(client: Callable[[LLMConfig], ChatClient]) -> Callable[[MemoryPolicy], MemoryAgent]:
    def make(policy: MemoryPolicy) -> MemoryAgent:
        return build_agent(policy, client(policy.llm))

    return make


def episode_config(config: EvolveConfig, policy: MemoryPolicy) -> EpisodeConfig:
    return EpisodeConfig(
        rounds_init=config.episode.rounds_init,
        rounds_update=config.episode.rounds_update,
        diagnose=config.episode.diagnose,
        amemgym_compat=policy.amemgym_compat,
        constrained_answers=config.episode.constrained_answers,
        max_concurrent_users=config.episode.user_concurrency,
        seed=config.split.seed,
    )


async def upper_bound(config: EvolveConfig, client: Callable[[LLMConfig], ChatClient], policy: MemoryPolicy, items: Sequence[Item],
                      run_dir: Path) -> UpperBoundTable | None:
    """The perfect-information upper bound of the agent's LLM on these users, computed once per run."""
    if not config.upper_bound:
        return None
    path = run_dir / UPPER_BOUND_FILE
    if path.exists():
        return UpperBoundTable.model_validate_json(path.read_text(encoding="utf-8"))
    table = await compute_upper_bound(
        client(policy.llm), items, model=policy.llm.model, amemgym_compat=policy.amemgym_compat,
        constrained=episode_config(config, policy).constrained_answers, seed=config.split.seed,
    )
    write_json_atomic(path, json.loads(table.model_dump_json()))
    return table


def scores(episodes: Sequence[EpisodeResult], items: Sequence[Item],
           table: UpperBoundTable | None) -> tuple[Scores, list[UserScores]]:
    return score_episodes(episodes, items, table), user_scores(episodes, items, table)


def add_usage(first: UsageReport, second: UsageReport) -> UsageReport:
    roles = set(first.by_role) | set(second.by_role)
    return UsageReport(
        by_role={
            role: first.by_role.get(role, RoleUsage()).plus(second.by_role.get(role, RoleUsage())) for role in roles
        }
    )


class Spend:
    """Usage of this run across processes: what earlier processes recorded plus this one's delta.

    The run saves it at every checkpoint, right after a result is written (each finished period,
    evaluation, plan, upper-bound table, generation) with no await in between, so every call behind a
    saved result is in ``spend.json``. A killed process loses only the calls made since its last
    checkpoint, and those belong to unsaved work that the resumed process redoes and counts again. So
    with one user and one candidate at a time and no response cache, a killed-and-resumed run reports
    exactly the usage of an uninterrupted one. With concurrency it may report more (work in flight at a
    checkpoint is counted when saved and again when redone: money really spent), never fewer calls;
    with the response cache, redone calls are cache hits, which cost no dollars.
    """

    def __init__(self, run_dir: Path, hub: Hub) -> None:
        self.path = run_dir / "spend.json"
        self.before = (
            UsageReport.model_validate_json(self.path.read_text(encoding="utf-8")) if self.path.exists() else UsageReport()
        )
        self.hub = hub
        self.start = hub.accounting.report()

    def total(self) -> UsageReport:
        return add_usage(self.before, self.hub.accounting.report().minus(self.start))

    def save(self) -> None:
        write_json_atomic(self.path, json.loads(self.total().model_dump_json()))

    def exceeded(self, config: EvolveConfig) -> str | None:
        """Which budget is spent, if any (calls count requests that reached an endpoint)."""
        total = self.total().total()
        budget = config.budget
        if budget.max_calls is not None and total.calls - total.cache_hits >= budget.max_calls:
            return f"call budget ({budget.max_calls})"
        if budget.max_tokens is not None and total.prompt_tokens + total.completion_tokens >= budget.max_tokens:
            return f"token budget ({budget.max_tokens})"
        if budget.max_dollars is not None and total.dollars >= budget.max_dollars:
            return f"dollar budget ({budget.max_dollars})"
        return None


class RunBase:
    """What every protocol builds first: users, recorded split, seed, evaluator, proposer, spend.

    Everything that can be checked without an LLM call (data, the split against the data, agent kind,
    components, LLM endpoints) is checked before the run folder is claimed: a failed start writes nothing.
    """

    def __init__(self, config: EvolveConfig, run_dir: Path, hub: Hub, *, resume: bool) -> None:
        self.config = config
        self.run_dir = run_dir
        self.hub = hub
        self.users = load_users(config)
        self.items = {item.id: item for item in self.users}
        fresh_split = make_split(self.users, config)
        self.seed = Candidate(policy=seed_policy(config), origin="seed")
        self.clients: dict[LLMConfig, ChatClient] = {}
        self.client(self.seed.policy.llm)
        simulator = make_simulator(config, self.client)
        proposer_lm = hub.dspy_lm(config.llm.proposer, role="proposer")
        if hasattr(proposer_lm, "gateway"):
            self.clients[config.llm.proposer] = proposer_lm.gateway
        self.proposer = Proposer(proposer_lm, adapter=config.proposer_adapter)
        self.bounds = LengthBounds(min_ratio=config.min_length_ratio, max_ratio=config.max_length_ratio)

        inputs = {"config": config.hash_payload(), "data": item_fingerprints(self.users),
                  "seed_policy": self.seed.policy.model_dump(mode="json")}
        claim_run_dir(run_dir, config, resume, inputs)
        self.split = recorded_split(run_dir, fresh_split)
        self.spend = Spend(run_dir, hub)
        self.evaluator = Evaluator(
            root=run_dir,
            items=self.users,
            make_agent=agent_factory(self.client),
            simulator=simulator,
            episode_config=episode_config(config, self.seed.policy),
            on_saved=self.spend.save,
        )
        self.tracker = (
            Tracker(run_dir=run_dir, uri=config.tracking.uri, experiment=config.tracking.experiment or config.name)
            if config.tracking.enabled
            else None
        )

    async def upper_bound_table(self, items: Sequence[Item]) -> UpperBoundTable | None:
        """The upper-bound table on ``items`` (computed once per run; a spend checkpoint of its own)."""
        table = await upper_bound(self.config, self.client, self.seed.policy, items, self.run_dir)
        self.spend.save()
        return table

    def client(self, config: LLMConfig) -> ChatClient:
        """The hub's client for ``config``, remembered so ``close_clients`` can release it."""
        if config not in self.clients:
            self.clients[config] = self.hub.client(config)
        return self.clients[config]

    async def close_clients(self) -> None:
        """Close this event loop's connections before ``asyncio.run`` closes the loop under them."""
        for client in self.clients.values():
            close = getattr(client, "aclose", None)
            if close is not None:
                await close()

    def tracking_params(self) -> dict[str, Any]:
        """The parent run's params: what defines this evolution."""
        return {
            "name": self.config.name, "protocol": self.config.protocol, "seed_policy_id": self.seed.id,
            "agent_kind": self.seed.policy.kind, "agent_model": self.seed.policy.llm.model,
            "proposer_model": self.config.llm.proposer.model, "feedback_mode": self.config.feedback.mode.value,
            "components": ",".join(self.config.components), "split_seed": self.config.split.seed,
            "optuna_seed": self.config.optuna.seed, "data_hash": data_hash(self.users),
            "n_train": len(self.split.train), "n_val": len(self.split.val), "n_test": len(self.split.test),
            "git_commit": git_commit(Path(__file__).parent) or "unknown",
        }
