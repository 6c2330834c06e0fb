"""The evolution config: one YAML file says what evolves, on which data, within which budget.

Validated by pydantic; any error becomes a ``UserInputError`` naming the file and the field path
(``budget.generations``), so a typo never starts an expensive run.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import (
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import ErrorDetails

from memevo.agents.llm.config import SPEED_ONLY_FIELDS, LLMConfig
from memevo.agents.policy import MemoryPolicy
from memevo.core.config_io import read_mapping
from memevo.core.errors import UserInputError
from memevo.core.lazy_model import LazyModel
from memevo.environments.eval_run import DEFAULT_SIMULATOR, SimulatorName
from memevo.environments.feedback import FeedbackConfig
from memevo.environments.registry import DEFAULT_ENVIRONMENT, EnvironmentName, capabilities_of, option_owners

if TYPE_CHECKING:
    from memevo.environments.protocol import Environment

HYPERPARAMETER_NAMES = ("update_every", "short_term", "top_k")
AMEMGYM_DEFAULTS = {"update_every": 2, "short_term": 4, "top_k": 30}
"""AMemGym's (2, 4, 30) settings: enqueued as the tuner's first trial."""


class _Strict(LazyModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class IntRange(_Strict):
    """An integer hyperparameter: either ``low``..``high`` (with ``step``) or explicit ``choices``."""

    low: int | None = Field(None, ge=0, description="Smallest value tried (with high).")
    high: int | None = Field(None, ge=0, description="Largest value tried (with low).")
    step: int = Field(1, ge=1, description="Spacing of the values between low and high.")
    choices: list[int] | None = Field(None, description="The values tried, instead of low/high.")

    @model_validator(mode="after")
    def _one_form(self) -> IntRange:
        if self.choices is not None:
            if self.low is not None or self.high is not None:
                raise ValueError("give either choices or low/high, not both")
            if not self.choices:
                raise ValueError("choices must not be empty")
        elif self.low is None or self.high is None or self.low > self.high:
            raise ValueError("give low <= high, or choices")
        return self

    def contains(self, value: int) -> bool:
        if self.choices is not None:
            return value in self.choices
        assert self.low is not None and self.high is not None
        return self.low <= value <= self.high and (value - self.low) % self.step == 0


class _EitherOr(_Strict):
    """A section that takes exactly one of two alternative fields (named by ``alternatives``)."""

    alternatives: ClassVar[tuple[str, str]]

    @model_validator(mode="after")
    def _exactly_one(self) -> _EitherOr:
        first, second = self.alternatives
        if (getattr(self, first) is None) == (getattr(self, second) is None):
            raise ValueError(f"give exactly one of {first} or {second}")
        return self


class SeedConfig(_EitherOr):
    """The seed candidate: a policy file (ours or an AMemGym agent config) or an inline MemoryPolicy."""

    alternatives = ("policy_file", "policy")
    policy_file: Path | None = Field(None, description="A policy file (memevo YAML/JSON or an AMemGym agent JSON), "
                                     "relative to this config.")
    policy: MemoryPolicy | None = Field(None, description="The policy written inline.")


SPLIT_ROLES = {"train": "training", "val": "validation", "test": "test"}
"""Split field -> what its users are for (used in error messages)."""


class SplitConfig(_Strict):
    """Disjoint train/val/test users: counts (ints) or fractions (floats < 1) of the item list.

    Which splits must be non-empty depends on the protocol (``EvolveConfig.required_splits``); a
    fraction that rounds to 0 users is caught when the split meets the data (``counts``).
    """

    train: float = Field(0.5, ge=0, description="Users the proposer learns from: a count, or a fraction below 1.")
    val: float = Field(0.25, ge=0, description="Users candidates are selected on: a count, or a fraction below 1.")
    test: float = Field(0.25, ge=0, description="Held-out users seed and best are reported on: a count, or a "
                        "fraction below 1.")
    seed: int = Field(0, description="Seed of the shuffle that assigns users to the splits.")

    def _size(self, name: str, n_users: int) -> int:
        value: float = getattr(self, name)
        return round(value * n_users) if value < 1 else int(value)

    def counts(self, n_users: int, required: Collection[str] = tuple(SPLIT_ROLES), *,
               source: str | None = None) -> tuple[int, int, int]:
        """(train, val, test) user counts; every split in ``required`` gets at least one user."""
        sizes = {name: self._size(name, n_users) for name in SPLIT_ROLES}
        if not any(sizes.values()):
            raise UserInputError(f"the split gives none of the {n_users} users to any split", source=source,
                                 field="split")
        for name in required:
            if sizes[name] < 1:
                value: float = getattr(self, name)
                raise UserInputError(
                    f"{value:g} of the {n_users} users is 0 {SPLIT_ROLES[name]} users; at least 1 is needed "
                    "(give a count, or a larger fraction)",
                    source=source,
                    field=f"split.{name}",
                )
        if sum(sizes.values()) > n_users:
            raise UserInputError(
                f"split needs {sum(sizes.values())} users (train {sizes['train']}, val {sizes['val']}, "
                f"test {sizes['test']}) but the data has {n_users}",
                source=source,
                field="split",
            )
        return sizes["train"], sizes["val"], sizes["test"]


class DataConfig(_EitherOr):
    """Where the users come from: a data file/dataset or a procedural synth spec (SynthConfig fields)."""

    alternatives = ("path", "synth")
    path: str | None = Field(None, description="data.json, a dataset folder or file (relative to this config), or "
                             "a Hugging Face dataset id; see the data format below.")
    synth: dict[str, Any] | None = Field(None, description="A procedural world: the fields of the procedural "
                                         "environment below.")
    limit: int | None = Field(None, ge=1, description="Use only the first N items.")
    dialog_field: str | None = Field(
        None, description="memorybench: the field whose training dialogs are replayed (default: dialog). Its LoCoMo "
        "and DialSim datasets have only per-baseline dialogs (dialog_mem0, dialog_a_mem, dialog_bm25, ...); other "
        "datasets replay their own dialog.")

    def environment_options(self) -> dict[str, str]:
        """The environment's own settings this data section sets (keyword arguments of its class)."""
        return {} if self.dialog_field is None else {"dialog_field": self.dialog_field}


class TestEnvironmentConfig(_Strict):
    """A second environment the seed and the best candidate are also tested on: evolve on one benchmark, report
    held-out scores on another. Every item of its data is a test user (none of them is seen during evolution)."""

    environment: EnvironmentName = Field(description="The environment the test data is read by.")
    data: DataConfig = Field(description="Its items (path; synth for amemgym only).")


class BudgetConfig(_Strict):
    """When the evolution stops: generations, patience, and limits on calls, tokens and dollars."""

    generations: int = Field(3, ge=0, description="Generations to run; 0 scores the seed only.")
    candidates: int = Field(2, ge=1, description="K: proposals (candidates) per generation.")
    max_calls: int | None = Field(None, ge=1, description="Stop once this many LLM calls (cache hits not counted) "
                                  "were made.")
    max_tokens: int | None = Field(None, ge=1, description="Stop once this many prompt and completion tokens "
                                   "were used.")
    max_dollars: float | None = Field(None, gt=0, description="Stop once this much was spent, or at a call with no "
                                      "known price (set llm.price).")
    patience: int | None = Field(None, ge=1, description="Stop after this many generations without improvement.")


class LLMSettings(_Strict):
    """The models of each role besides the agent's own."""

    agent: LLMConfig | None = Field(None, description="Overrides the seed policy's llm when given.")
    proposer: LLMConfig = Field(default_factory=lambda: LLMConfig.model_validate({}), description="The model that writes new prompts.")
    simulator: LLMConfig | None = Field(None, description="Needed only when episode.simulator is 'llm'.")
    judge: LLMConfig | None = Field(None, description="Grades free-text answers of environments that score with an "
                                    "LLM judge (calls counted under the judge role).")


class EpisodeSettings(_Strict):
    """How each user's episode runs: rounds, simulator, truncation, and how many run at once."""

    rounds_init: int = Field(1, ge=1, description="Rounds per session in period 0.")
    rounds_update: int = Field(2, ge=1, description="Rounds per session in later periods.")
    simulator: SimulatorName = Field(DEFAULT_SIMULATOR, description="User simulator: fixed templates (no "
                                                  "calls) or an LLM (llm.simulator).")
    diagnose: bool = Field(False, description="Probe the memory after each period for the write/read/utilization "
                           "failure split.")
    constrained_answers: bool | None = Field(
        None,
        description="Constrain question and probe replies to a JSON schema; default: on unless the policy is amemgym_compat.",
    )
    answer_mode: Literal["auto", "generated", "likelihood"] = Field(
        "auto", description="How questions are answered; auto: likelihood on the embedded model, else generated.")
    max_periods: int | None = Field(None, ge=1, description="Truncate every item to its first N periods.")
    max_questions: int | None = Field(None, ge=1, description="Keep only the first N questions per item.")
    user_concurrency: int | None = Field(
        None, ge=1, description="Users evaluated at once, over all candidates of a generation; default: the agent "
        "endpoint's concurrency limit (users wait on the LLM, so as many as it serves).")
    candidate_concurrency: int | None = Field(
        None, ge=1, description="Candidates evaluated at once; default: all of a generation (the users at once and "
        "the endpoint's limit bound the work in flight). Under strategy.first_accepted (the default with "
        "validation_first) they run one at a time whatever this says.")
    speculate: Literal["off", "candidate", "generation"] = Field(
        "off", description="Episodes played before the loop knows it needs them: less waiting on the run's chain of "
        "dependent calls for more calls (those not needed are cancelled; the evolution benchmark shows the trade). "
        "candidate: a candidate, as it starts, plays every user it may still need (sequential acceptance: all its "
        "race users and its other validation users, and the parent its race users; validation_first: the train check "
        "beside validation); generation: the generation's later candidates start at once too (their results are "
        "still taken in the plan's order). Either way the seed plays its test users from the start, and in the last "
        "generation the candidates and the best so far play theirs. Off while a call, token or dollar budget is set. "
        "Results do not depend on it.")


DEFAULT_TRACKER = "mlflow"


class TrackingConfig(_Strict):
    """Which tracker logs the run (the names are ``memevo.evolve.plugins.TRACKERS``), and where."""

    enabled: bool = Field(True, description="Log runs, metrics and prompts to the tracker.")
    tracker: str = Field(DEFAULT_TRACKER, description="The tracker that logs the run: mlflow (the one so far).")
    uri: str | None = Field(None, description="MLflow tracking URI; default sqlite:///<run_dir>/mlflow.db.")
    experiment: str | None = Field(None, description="Default: the config file's stem.")
    register_prompts: bool = Field(True, description="Register each kept prompt in MLflow's prompt registry.")

    @model_serializer(mode="wrap")
    def _without_default_tracker(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The default tracker is left out of the dump: the config a run logged, hashed and resumes on stays the one
        written before trackers had names."""
        dump: dict[str, Any] = handler(self)
        if dump.get("tracker") == DEFAULT_TRACKER:
            del dump["tracker"]
        return dump


class OptunaConfig(_Strict):
    """The Optuna study that tunes the hyperparameters."""

    storage: str | None = Field(None, description="SQLAlchemy URL; default sqlite:///<run_dir>/optuna.db.")
    sampler: Literal["tpe", "random"] = Field("tpe", description="Optuna sampler of the hyperparameters.")
    seed: int = Field(0, description="Seed of the sampler.")
    pruner: Literal["median", "wilcoxon", "none"] = Field("median", description="Optuna pruner of trials on "
                                                          "train users.")
    n_startup_trials: int = Field(2, ge=0, description="Median pruner: completed trials before pruning starts.")
    n_warmup_steps: int = Field(0, ge=0, description="Median pruner: users evaluated before pruning a trial.")
    p_threshold: float = Field(0.1, gt=0, lt=1, description="Wilcoxon pruner p-value.")


Objective = Literal["accuracy", "amemgym_memory_score"]

LEGACY_OBJECTIVE = "memory_score"
LEGACY_OBJECTIVE_NOTE = (
    "objective: memory_score now means accuracy for every decision: on the same users the pooled memory score is "
    "accuracy shifted and scaled, and AMemGym's mean of per-cell ratios amplifies noise; both memory scores are "
    "reported beside it (objective: amemgym_memory_score decides on AMemGym's ratio, at that risk)"
)
AMEMGYM_OBJECTIVE_NOTE = (
    "objective: amemgym_memory_score decides on AMemGym's mean of per-(user, period) ratios; a cell whose upper "
    "bound is barely above random weighs 10-20x and one below random flips its sign, so small runs choose by "
    "noise (objective: accuracy is the stable choice)"
)


def stored_objective(value: object) -> object:
    """What a record written before objectives were renamed decided on: ``memory_score`` was AMemGym's ratio."""
    return "amemgym_memory_score" if value == LEGACY_OBJECTIVE else value


_SAID: set[object] = set()


def _say_objective(data: dict[str, Any], label: str) -> None:
    """Warn once per process what a legacy or risky objective means for this run (an ablation parses its
    base config once per arm and seed)."""
    objective = data.get("objective")
    notes = {LEGACY_OBJECTIVE: LEGACY_OBJECTIVE_NOTE, "amemgym_memory_score": AMEMGYM_OBJECTIVE_NOTE}
    note = notes.get(objective) if isinstance(objective, str) else None
    if note is not None and note not in _SAID:
        _SAID.add(note)
        logging.getLogger("memevo.evolve").warning("%s: %s", label, note)


SEQUENTIAL_IGNORES = ("order", "minibatch", "complete_parent_train")
"""Strategy fields about validation and train users taken in turn, which a race does not have."""


class StrategyConfig(_Strict):
    """How the loop searches: which proposers, how parents are chosen, when a candidate is accepted.

    Names are looked up in the registries of ``memevo.evolve.proposers`` and ``memevo.evolve.selection``
    when the config is parsed, so a typo fails before any run starts.
    """

    proposers: list[str] = Field(
        default_factory=lambda: ["reflection"], min_length=1,
        description="Proposers sharing a generation's K candidates in turn: reflection, delta, merge.",
    )
    parents: str = Field("elitist", description="Parent selection: elitist (best on validation; under sequential "
                         "acceptance the last candidate kept) or pareto (mean or paired acceptance).")
    acceptance: str = Field(
        "sequential", description="sequential (a race on users fresh for the parent, paired Wilcoxon test at each "
        "round, see memevo.evolve.selection.race; ahead of mean, best-of-N and GEPA on benchmarks/strategies.py), mean "
        "(beats the parent's validation mean) or paired (a t-test). A config that sets an option of mean or paired "
        "only (order, minibatch, complete_parent_train, parents: pareto) and no acceptance is read as mean, with a "
        "warning.")
    confidence: float | None = Field(
        None, description="paired, sequential: one-sided confidence that the candidate is better (sequential: over every "
        "look of its race); default 0.9 (paired), 0.3 (sequential: its bar is fresh, so a neutral candidate kept costs "
        "only episodes and may open a way on; 0.3 did best on the benchmark's tuning seeds, none harmful kept).")
    min_effect: float = Field(0.0, ge=0, description="paired, sequential: smallest mean gain per (user, period).")
    race_users: int = Field(2, ge=1, description="sequential: users each candidate in the race plays per round.")
    futility: bool = Field(
        True, description="sequential: a candidate with no mean gain over its parent after a round leaves the race "
        "(false: only one the test finds worse leaves).")
    seed_users: Literal["all", "first_round"] = Field(
        "first_round", description="sequential: the search users the seed plays in generation 0: those of the first "
        "race's first round (at least one train and one validation user; it plays others only when a race needs them, "
        "so the budget goes to candidates: +0.056 held-out over all on the benchmark's tuning worlds), or all.")
    winner_validation: Literal["all", "raced"] = Field(
        "raced", description="sequential: the validation users a kept candidate plays for its validation score: those "
        "that decided its race (at least one), or all (episodes no race decision needs).")

    @model_validator(mode="before")
    @classmethod
    def _mean_for_its_options(cls, data: Any, info: ValidationInfo) -> Any:
        """A config written when mean was the default and that sets an option only mean or paired acceptance have
        keeps the rule it was written for: read as ``acceptance: mean``, said once per file and field."""
        if not isinstance(data, dict) or "acceptance" in data:
            return data
        given = [name for name in SEQUENTIAL_IGNORES if name in data]
        given += ["parents"] if data.get("parents", "elitist") != "elitist" else []
        if not given:
            return data
        source = (info.context or {}).get("source", "evolve config")
        if (source, given[0]) not in _SAID:
            _SAID.add((source, given[0]))
            logging.getLogger("memevo.evolve").warning(
                "%s: strategy.%s applies to acceptance mean or paired, and strategy.acceptance is not set: read as "
                "acceptance: mean (the default is now sequential; set strategy.acceptance to say which)", source,
                given[0])
        return {**data, "acceptance": "mean"}

    @property
    def test_confidence(self) -> float:
        """``confidence``, or the default of the acceptance rule."""
        if self.confidence is not None:
            return self.confidence
        return 0.3 if self.acceptance == "sequential" else 0.9
    minibatch: int | None = Field(
        2, ge=1, description="Train users a proposal is scored on beside its parent: validation_first, the check "
        "after validation; train_first, a gate before the full evaluation. None: all train users (validation_first), "
        "no gate (train_first).",
    )
    complete_parent_train: bool = Field(
        True, description="validation_first: a parent checked on a minibatch only first runs on the other train users "
        "(its evidence and train comparison then cover them all); false: it keeps the train users it ran on.",
    )
    first_accepted: bool = Field(
        True, description="sequential: each candidate races alone in the plan's order and the first kept ends the "
        "generation (false: all race together, halved each round; fewer kept at the same calls on the benchmark). validation_first: candidates run one at a time in the plan's order, each checked on the "
        "train users as soon as the acceptance rule prefers it on validation; the first one not worse than its parent "
        "ends the generation and the rest are not run (GEPA's one proposal at a time: fewer agent calls, but a "
        "generation's candidates do not run at once; false runs them at once, episode.candidate_concurrency wide).",
    )
    resamples: int = Field(
        2, ge=0, description="How many times a generation asks its proposers again for the slots of proposals that "
        "repeated a known policy (new samples: a known policy is never evaluated twice); after that, or with 0, the "
        "generation runs with fewer candidates.",
    )
    order: Literal["train_first", "validation_first"] = Field(
        "validation_first", description="validation_first: validation users first; the candidates the acceptance "
        "rule prefers there are checked on the minibatch of train users, best first, until one is not worse than its "
        "parent over those and the validation users together; only it joins the pool, the others run on no train "
        "user. train_first: train users (pruned by Optuna), then validation.",
    )


EPISODE_WIDTH_FIELDS = ("user_concurrency", "candidate_concurrency", "speculate")


class EvolveConfig(_Strict):
    """Everything one evolution run needs; see experiments/*.yaml for examples."""

    name: str = Field("evolution", description="Names the run (its MLflow experiment by default).")
    seed: SeedConfig
    components: list[str] = Field(
        default_factory=lambda: ["memory_types"],
        min_length=0,
        description="Prompt components that evolve (e.g. only memory_types, or the whole write_prompt).",
    )
    task: str = Field(
        "Improve what the assistant stores in long-term memory so that it can later answer questions "
        "about the user's current situation and preferences.",
        description="Task description shown to the proposer.",
    )
    hyperparameters: dict[Literal["update_every", "short_term", "top_k"], IntRange] = Field(
        {}, description="Policy settings Optuna tunes, each over a range; none: the seed's are kept.")
    feedback: FeedbackConfig = Field(default_factory=FeedbackConfig, description="What the proposer is told about "
                                     "the questions.")
    evidence_max_tokens: int = Field(
        3000, ge=100,
        description="Token budget (cl100k_base tokens) of the evidence rendered for the proposer (stratified choice).",
    )
    objective: Objective = Field(
        "accuracy",
        description="What selection, acceptance, the tuner, pruning and the headline use: accuracy, or (explicitly, "
        "with its noise) amemgym_memory_score. The legacy memory_score reads as accuracy.",
    )
    strategy: StrategyConfig = Field(default_factory=StrategyConfig)
    upper_bound: bool = Field(True, description="Compute the perfect-information upper bound (memory score; "
                              "amemgym only, n/a on other environments).")
    environment: EnvironmentName = Field(
        DEFAULT_ENVIRONMENT, description="Which benchmark the data is: amemgym (simulated users, multiple choice, "
        "on-policy), or locomo, longmemeval, memoryagentbench, memorybench (fixed sessions replayed, then questions).")
    data: DataConfig
    test_environment: TestEnvironmentConfig | None = Field(
        None, description="Cross-benchmark evaluation: also test the seed and the best candidate on this "
        "environment's items.")
    split: SplitConfig = Field(default_factory=SplitConfig)
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    protocol: Literal["outer_loop", "amemgym_period"] = Field(
        "outer_loop", description="outer_loop: train/validation/test users, candidates selected on validation; "
        "amemgym_period: AMemGym's protocol, each user's prompt evolves within its own episode, period by period.")
    llm: LLMSettings = Field(default_factory=LLMSettings)
    episode: EpisodeSettings = Field(default_factory=EpisodeSettings)
    tracking: TrackingConfig = Field(default_factory=TrackingConfig)
    optuna: OptunaConfig = Field(default_factory=OptunaConfig)
    proposer_adapter: Literal["chat", "json"] = Field("chat", description="DSPy adapter (chat falls back to JSON).")
    min_length_ratio: float = Field(0.3, gt=0, le=1, description="A proposal shorter than this x parent is rejected.")
    max_length_ratio: float = Field(4.0, ge=1, description="A proposal longer than this x parent is rejected.")
    source: Path | None = Field(None, exclude=True, description="The file this config came from.")

    @field_validator("objective", mode="before")
    @classmethod
    def _legacy_objective(cls, value: Any) -> Any:
        return "accuracy" if value == LEGACY_OBJECTIVE else value

    @model_validator(mode="after")
    def _llm_simulator(self) -> EvolveConfig:
        if self.episode.simulator == "llm" and self.llm.simulator is None:
            raise ValueError("episode.simulator 'llm' needs llm.simulator")
        return self

    @model_validator(mode="after")
    def _priced_for_a_dollar_budget(self) -> EvolveConfig:
        """A dollar budget cannot weigh a model without a price: refused before any call rather than stopped at it."""
        if self.budget.max_dollars is not None:
            for role, config in self.llm:
                if config is not None and not config.has_price():
                    raise ValueError(f"budget.max_dollars needs a price for llm.{role} ('{config.model}' is not in "
                                     f"litellm's table): set llm.{role}.price: {{prompt: USD, completion: USD}} per "
                                     "1M tokens")
        return self

    @property
    def required_splits(self) -> tuple[str, ...]:
        """The splits that must not be empty: the outer loop trains, selects on validation and reports
        on test users. The AMemGym protocol selects nothing (each user evolves on its own), so it runs
        on the test users, else the validation, else the train users: any one non-empty split will do."""
        return tuple(SPLIT_ROLES) if self.protocol == "outer_loop" else ()

    def resolve_path(self, value: str | Path) -> Path:
        """Relative paths in the config are relative to the config file."""
        path = Path(value).expanduser()
        if not path.is_absolute() and self.source is not None:
            return self.source.parent / path
        return path

    @property
    def one_candidate_at_a_time(self) -> bool:
        """``strategy.first_accepted`` in effect: the outer loop, validation first."""
        strategy = self.strategy
        return self.protocol == "outer_loop" and strategy.order == "validation_first" and strategy.first_accepted

    def hash_payload(self) -> dict[str, Any]:
        """The config as logged and hashed (without its location on disk)."""
        return self.model_dump(mode="json", exclude={"source"})

    def identity_payload(self) -> dict[str, Any]:
        """The config a resume must match: without the widths (requests, users and candidates at once), which
        change the speed of a run but not its result, nor the environment fields at their defaults (runs started
        before environments were configurable resume)."""
        payload = without_widths(self.hash_payload())
        if payload.get("environment") == DEFAULT_ENVIRONMENT:
            del payload["environment"]
        if payload.get("test_environment") is None:
            payload.pop("test_environment", None)
        if isinstance(payload.get("llm"), dict) and payload["llm"].get("judge") is None:
            payload["llm"].pop("judge", None)
        for data in (payload.get("data"), (payload.get("test_environment") or {}).get("data")):
            if isinstance(data, dict) and data.get("dialog_field") is None:
                data.pop("dialog_field", None)
        return payload


def without_widths(payload: dict[str, Any]) -> dict[str, Any]:
    """An evolve config dump (whole, or overrides of one) without its widths, in place: the fields a resume may
    change."""
    episode = payload.get("episode")
    if isinstance(episode, dict):
        for name in EPISODE_WIDTH_FIELDS:
            episode.pop(name, None)
    llm = payload.get("llm")
    if isinstance(llm, dict):
        for role in llm.values():
            if isinstance(role, dict):
                for name in SPEED_ONLY_FIELDS:
                    role.pop(name, None)
    return payload


def _field_path(error: ErrorDetails) -> str:
    return ".".join(str(part) for part in error["loc"] if part != "[key]") or "(root)"


def parse_evolve_config(data: Any, *, source: Path | None = None) -> EvolveConfig:
    """Validate already-loaded config data; errors name the source and the field path."""
    label = str(source) if source else "evolve config"
    if not isinstance(data, dict):
        raise UserInputError("the config must be a mapping", source=label)
    try:
        config = EvolveConfig.model_validate({**data, "source": source}, context={"source": label})
    except ValidationError as error:
        first = error.errors()[0]
        raise UserInputError(first["msg"], source=label, field=_field_path(first)) from None
    _say_objective(data, label)
    if not (config.split.train or config.split.val or config.split.test):
        raise UserInputError("the split gives no users", source=label, field="split")
    for name in config.required_splits:
        if getattr(config.split, name) == 0:
            raise UserInputError(
                f"the {config.protocol} protocol needs at least 1 {SPLIT_ROLES[name]} user", source=label,
                field=f"split.{name}",
            )
    check_environment(config, source=label)
    if config.objective == "amemgym_memory_score" and not config.upper_bound:
        raise UserInputError("objective amemgym_memory_score needs the upper bound (upper_bound: true), or use "
                             "objective: accuracy", source=label, field="objective")
    check_strategy(config.strategy, source=label)
    check_in_episode(config, source=label)
    check_sequential(config, source=label)
    if config.split.val >= 1:
        check_validation_users(config, int(config.split.val), source=label)
    return config


def check_environment(config: EvolveConfig, *, source: str | None) -> None:
    """What an environment lacks (procedural worlds, in-episode evolution, an upper bound for the memory ratio, an
    option of another environment), asked of it, is an error naming the field (``Capabilities``)."""
    for wanted, needs, field, what in (
        (config.data.synth is not None, "procedural_worlds", "data.synth",
         "a procedural world is AMemGym data; give data.path"),
        (config.protocol == "amemgym_period", "in_episode", "protocol",
         "the amemgym_period protocol evolves within AMemGym episodes; use outer_loop"),
        (config.objective == "amemgym_memory_score", "upper_bound", "objective",
         "AMemGym's memory ratio needs its upper bound; use objective: accuracy"),
    ):
        if wanted and not getattr(capabilities_of(config.environment), needs):
            raise UserInputError(f"environment '{config.environment}': {what}", source=source, field=field)
    test = config.test_environment
    for environment, data, prefix in ((config.environment, config.data, ""),
                                      *(() if test is None else ((test.environment, test.data, "test_environment."),))):
        if data.dialog_field is not None and "dialog_field" not in capabilities_of(environment).options:
            raise UserInputError(f"environment '{environment}': dialog_field applies to {option_owners('dialog_field')} only",
                                 source=source, field=f"{prefix}data.dialog_field")
    if test is not None and test.data.synth is not None and not capabilities_of(test.environment).procedural_worlds:
        raise UserInputError(f"environment '{test.environment}': a procedural world is AMemGym data; give a path",
                             source=source, field="test_environment.data.synth")
    if config.protocol == "amemgym_period" and test is not None:
        raise UserInputError("a test environment is reported by protocol outer_loop", source=source,
                             field="test_environment")


def check_judge(config: EvolveConfig, environment: Environment[Any], items: Sequence[Any], field: str) -> None:
    """An environment that judges some of these items' answers needs ``llm.judge``: said at start-up, before any
    call, rather than when the first judged answer (perhaps the test users', after the whole evolution) is scored.
    ``field`` names the config section the items come from."""
    judged = sum(environment.judged(item) for item in items)
    if judged and config.llm.judge is None:
        raise UserInputError(f"environment '{environment.name}' ({field}) scores the answers of {judged} of its "
                             f"{len(items)} items with an LLM judge: configure llm.judge",
                             source=str(config.source or "evolve config"), field="llm.judge")


def check_strategy(strategy: StrategyConfig, *, source: str | None) -> None:
    """Strategy names must be registered and the paired test's confidence must lie in (0, 1)."""
    from memevo.evolve.registries import ACCEPTANCE, PARENT_SELECTORS, PROPOSERS

    for index, name in enumerate(strategy.proposers):
        if name not in PROPOSERS:
            raise UserInputError(f"unknown proposer '{name}' (known: {', '.join(PROPOSERS.names())})",
                                 source=source, field=f"strategy.proposers.{index}")
    for registry, name, field in ((PARENT_SELECTORS, strategy.parents, "strategy.parents"),
                                  (ACCEPTANCE, strategy.acceptance, "strategy.acceptance")):
        if name not in registry:
            raise UserInputError(f"unknown {registry.kind} '{name}' (known: {', '.join(registry.names())})",
                                 source=source, field=field)
    if strategy.confidence is not None and not 0 < strategy.confidence < 1:
        raise UserInputError(f"confidence must lie strictly between 0 and 1, not {strategy.confidence:g}",
                             source=source, field="strategy.confidence")


OUTER_LOOP_ONLY = ("order", "minibatch", "first_accepted", "complete_parent_train", "resamples")
"""Strategy fields about a generation's candidates and their train users, which the in-episode protocol has not
(it takes one proposal per period as it comes, never asking again)."""


def check_in_episode(config: EvolveConfig, *, source: str | None) -> None:
    """The in-episode protocol would silently ignore a strategy field of the outer loop's candidates: one set
    in the file (not a default) is an error there."""
    if config.protocol != "amemgym_period":
        return
    for name in OUTER_LOOP_ONLY:
        if name in config.strategy.model_fields_set:
            raise UserInputError(
                "the amemgym_period protocol evolves each user's prompt within its episode and has no candidates to "
                f"order, check on train users, stop at or ask for again; strategy.{name} applies to protocol outer_loop only "
                "(remove it)", source=source, field=f"strategy.{name}")


def check_sequential(config: EvolveConfig, *, source: str | None) -> None:
    """Sequential acceptance races on train and validation users together along one line of kept candidates: a
    field set in the file (not a default) about the other rules' users or Pareto parents is an error there."""
    strategy = config.strategy
    if config.protocol != "outer_loop" or strategy.acceptance != "sequential":
        return
    if strategy.parents != "elitist":
        raise UserInputError(f"parent selection '{strategy.parents}' needs acceptance mean or paired; sequential "
                             "acceptance keeps one line of candidates (elitist)", source=source, field="strategy.parents")
    for name in SEQUENTIAL_IGNORES:
        if name in strategy.model_fields_set:
            raise UserInputError(f"strategy.{name} applies to acceptance mean or paired; sequential acceptance races "
                                 "on train and validation users together (remove it, or set strategy.acceptance)",
                                 source=source, field=f"strategy.{name}")


def check_validation_users(config: EvolveConfig, n_val: int, *, source: str | None) -> None:
    """Pareto selection compares candidates per validation instance: one user gives no frontier."""
    if config.protocol == "outer_loop" and config.strategy.parents == "pareto" and n_val < 2:
        raise UserInputError(f"parent selection 'pareto' needs at least 2 validation users, the split gives {n_val}",
                             source=source, field="strategy.parents")


def load_evolve_config(path: str | Path) -> EvolveConfig:
    """Read and validate an evolution config YAML (or JSON) file."""
    path = Path(path)
    return parse_evolve_config(read_mapping(path), source=path.resolve())
