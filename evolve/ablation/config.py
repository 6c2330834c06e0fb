"""The ablation config: several arms (evolve configs or overrides of one), several seeds, the same users.

An arm is a full evolve config file, or a base evolve config with overrides deep-merged into it. Every
(arm, seed) is resolved to a validated ``EvolveConfig`` before anything runs, and for each seed all arms
must agree on the data, the user split and the episode truncation, so that every (user, seed) unit is
scored under every arm and the arms can be compared pair by pair.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError, field_validator, model_validator

from memevo.core.config_io import read_mapping, user_error
from memevo.core.errors import UserInputError
from memevo.core.lazy_model import LazyModel
from memevo.evolve.config import EvolveConfig, parse_evolve_config

DEFAULT_ARMS: tuple[dict[str, Any], ...] = (
    {
        "name": "no-evolution",
        "overrides": {"budget": {"generations": 0}, "feedback": {"mode": "none", "with_ground_truth": False}},
    },
    {"name": "question-only", "overrides": {"feedback": {"mode": "question_only", "with_ground_truth": False}}},
    {"name": "complete", "overrides": {"feedback": {"mode": "complete"}}},
)
"""No evolution / question-only feedback / complete feedback: the comparison of AMemGym's Table 3."""

DEFAULT_MIN_EFFECT = 0.05
REPORT_ONLY_FIELDS = ("min_effect",)
"""Fields that change what the report says but not what any run computes: a resume may change them."""

SAME_USERS_FIELDS = ("data", "split", "episode.max_periods", "episode.max_questions")


class ArmSpec(LazyModel):
    """One arm: a name, optionally its own evolve config file, and overrides applied on top."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="The arm's name in tables and folders.")
    config: Path | None = Field(None, description="An evolve config file; default: the ablation's base.")
    overrides: dict[str, Any] = Field({}, description="Deep-merged into the evolve config.")

    @field_validator("name")
    @classmethod
    def _slug(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", value):
            raise ValueError("arm names are used as folder names: letters, digits, '-', '_', '.' only")
        return value


class AblationConfig(LazyModel):
    """Arms x seeds over the same users; see experiments/feedback-ablation*.yaml."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field("ablation", description="Names the run folder and the MLflow experiment.")
    base: Path | None = Field(None, description="Evolve config every arm starts from unless it names its own.")
    arms: list[ArmSpec] = Field(default_factory=lambda: [ArmSpec(**arm) for arm in DEFAULT_ARMS], min_length=1,
                                description="The variants compared; default: AMemGym's Table 3 (no evolution, "
                                "question-only and complete feedback).")
    seeds: list[int] = Field(default_factory=lambda: [0, 1, 2], min_length=1,
                             description="One evolution per arm and seed; seeds are the replicates of the tests.")
    seed_fields: list[str] = Field(
        default_factory=lambda: ["optuna.seed"],
        description="Dotted evolve-config fields set to the seed in each run. Adding 'split.seed' redraws the "
        "train/val/test users per seed (the same for every arm), so seeds become independent replicates.",
    )
    baseline: str | None = Field(None, description="Arm the others are tested against; default: the first.")
    ci_method: Literal["t", "bootstrap"] = Field(
        "t", description="Interval of each arm's mean over (user, seed) units, a secondary figure in "
        "ablation_arms.csv; the primary intervals are always the hierarchical bootstrap (seeds, then users).")
    confidence: float = Field(0.95, gt=0, lt=1, description="Level of the intervals.")
    min_effect: float = Field(
        DEFAULT_MIN_EFFECT, gt=0, description="The smallest difference in the objective worth finding (0.05: five "
        "accuracy points); the report says how many seeds a paired test needs to find it with 80% power. Only the "
        "report uses it, so a resume may change it.")
    tracking_uri: str | None = Field(None, description="MLflow URI for the parent and all arm runs; default sqlite:///<run_dir>/mlflow.db.")
    source: Path | None = Field(None, exclude=True)

    @model_validator(mode="after")
    def _consistent(self) -> AblationConfig:
        names = [arm.name for arm in self.arms]
        if len(set(names)) != len(names):
            raise ValueError(f"arm names must be unique, got {names}")
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError("seeds must be unique")
        if self.baseline is not None and self.baseline not in names:
            raise ValueError(f"baseline '{self.baseline}' is not one of the arms {names}")
        if self.base is None and any(arm.config is None for arm in self.arms):
            raise ValueError("give 'base' or a 'config' for every arm")
        if any(field.split(".")[0] == "data" for field in self.seed_fields):
            raise ValueError("seed_fields must not change the data: arms are compared on the same users")
        return self

    def resolve_path(self, value: Path) -> Path:
        path = value.expanduser()
        if not path.is_absolute() and self.source is not None:
            return self.source.parent / path
        return path

    @property
    def arm_names(self) -> list[str]:
        return [arm.name for arm in self.arms]

    @property
    def baseline_arm(self) -> str:
        return self.baseline or self.arms[0].name


def deep_merge(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """Nested dicts merge key by key; anything else in ``overrides`` replaces the base value."""
    merged = dict(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _set_dotted(data: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    head, _, rest = dotted.partition(".")
    if not rest:
        return {**data, head: value}
    inner = data.get(head) or {}
    if not isinstance(inner, dict):
        raise UserInputError(f"cannot set '{dotted}': '{head}' is not a mapping", field="seed_fields")
    return {**data, head: _set_dotted(inner, rest, value)}


def load_ablation_config(path: str | Path) -> AblationConfig:
    """Read and validate an ablation YAML; errors name the file and the field path."""
    path = Path(path)
    data = read_mapping(path)
    try:
        return AblationConfig.model_validate({**data, "source": path.resolve()})
    except ValidationError as error:
        raise user_error(error, str(path)) from None


def is_ablation_file(path: Path) -> bool:
    """An ablation YAML has ``arms`` or ``seeds`` at top level; an evolve config has ``seed`` and ``data``."""
    data = read_mapping(path)
    return "arms" in data or "seeds" in data


def _dump_field(config: EvolveConfig, dotted: str) -> Any:
    value: Any = config.hash_payload()
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _users_signature(config: EvolveConfig) -> dict[str, Any]:
    signature = {field: _dump_field(config, field) for field in SAME_USERS_FIELDS}
    if config.data.path is not None:
        signature["data"] = {**signature["data"], "path": str(config.resolve_path(config.data.path).resolve())}
    return signature


def resolve_arm(config: AblationConfig, arm: ArmSpec, seed: int) -> EvolveConfig:
    """The validated evolve config of one (arm, seed); MLflow goes to the ablation's shared store."""
    source = config.resolve_path(arm.config if arm.config is not None else config.base)  # type: ignore[arg-type]
    data = deep_merge(read_mapping(source), arm.overrides)
    for dotted in config.seed_fields:
        data = _set_dotted(data, dotted, seed)
    data["name"] = f"{config.name}-{arm.name}-seed{seed}"
    try:
        return parse_evolve_config(data, source=source.resolve())
    except UserInputError as error:
        raise UserInputError(f"arm '{arm.name}' (seed {seed}): {error}", source=str(config.source), field=error.field) from None


def resolve_all(config: AblationConfig) -> dict[tuple[str, int], EvolveConfig]:
    """Resolve every (arm, seed) up front and check that, seed by seed, all arms use the same users."""
    resolved = {(arm.name, seed): resolve_arm(config, arm, seed) for arm in config.arms for seed in config.seeds}
    reference_arm = config.arms[0].name
    for (arm, seed), evolve_config in resolved.items():
        expected = _users_signature(resolved[(reference_arm, seed)])
        actual = _users_signature(evolve_config)
        for field in SAME_USERS_FIELDS:
            if actual[field] != expected[field]:
                raise UserInputError(
                    f"arm '{arm}' uses different users than arm '{reference_arm}' for seed {seed} "
                    f"({actual[field]!r} != {expected[field]!r}); every arm must share data, split and truncation",
                    source=str(config.source),
                    field=f"arms.{arm}.{field}",
                )
    return resolved
