"""Settings of the LLM generation pipeline: AMemGym's environment knobs (section B) plus our own."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Literal

import yaml
from pydantic import ConfigDict, Field, ValidationError, field_validator

from memevo.agents.llm.config import LLMConfig
from memevo.core.errors import UserInputError
from memevo.core.lazy_model import LazyModel

SAMPLE_PERSONAS = Path(__file__).resolve().parent.parent / "assets" / "personas_sample.json"


class GenerationConfig(LazyModel):
    """One generation run. Defaults follow AMemGym v1.base except where noted.

    ``num_choices_per_state`` and ``max_changes_per_state`` are enforced here (the reference only
    mentioned them in prompts). The retry counts bound every repair loop so a weak model fails a
    user at a named stage instead of looping forever.
    """

    model_config = ConfigDict(extra="forbid")

    start_date: str = Field("2020-10-01", description="Simulation start, YYYY-MM-DD.")
    num_user_profiles: int = Field(20, ge=1, description="Users (personas) to generate.")
    num_questions: int = Field(10, ge=1, description="Questions per user.")
    num_periods: int = Field(10, ge=1, description="Update periods after period 0.")
    num_months_per_period: int = Field(3, ge=1, description="Simulated months between periods.")
    num_states_per_question: int = Field(2, ge=1, description="Variables each question depends on.")
    num_choices_per_state: int = Field(3, ge=2, description="Values each variable can take.")
    num_changes_per_period: int = Field(4, ge=1, description="Variables that change in each update period.")
    max_changes_per_state: int = Field(3, ge=1, description="Times one variable may change over all periods.")
    min_state_variants: int = Field(4, ge=2, description="Answer choices per question at least.")
    exclude_ids: list[str] = Field([], description="Persona uuids never drawn.")
    seed: int = Field(42, description="Seed of the persona draw and the random choices of each user.")
    personas_path: Path = Field(SAMPLE_PERSONAS, description="Nemotron-style persona file; default: the shipped "
                                "sample.")
    llm: LLMConfig = Field(default_factory=lambda: LLMConfig.model_validate({"temperature": 0.2, "max_tokens": 2048}),
                           description="The generating model; default temperature 0.2 and max_tokens 2048.")
    high_temperature: float = Field(1.0, ge=0.0, le=2.0, description="Question and state-update sampling.")
    low_temperature: float = Field(0.2, ge=0.0, le=2.0, description="Every other stage.")
    repair_turns: int = Field(4, ge=0, description="Error-feedback turns before a stage gives up.")
    check_retries: int = Field(5, ge=0, description="Rewrites allowed after a failed reflection/exposure/leak check.")
    leakage_check: Literal["judge", "string"] = Field(
        "judge",
        description="'judge': an LLM (role judge) guesses the non-target variables, plus the string check; "
        "'string': only the verbatim-value check.",
    )
    max_concurrent_users: int = Field(1, ge=1, description="Users generated at the same time.")

    @field_validator("start_date")
    @classmethod
    def _iso_date(cls, value: str) -> str:
        date.fromisoformat(value)
        return value


def load_generation_config(path: Path) -> GenerationConfig:
    """Read a YAML or JSON config; errors name the file and the field."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserInputError(f"cannot read config: {exc}", source=str(path)) from exc
    try:
        raw = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise UserInputError(f"not valid {path.suffix.lstrip('.') or 'YAML'}: {exc}", source=str(path)) from exc
    return parse_generation_config(raw or {}, source=str(path))


def parse_generation_config(raw: object, *, source: str) -> GenerationConfig:
    """Validate a mapping as a ``GenerationConfig``, turning the first pydantic error into a UserInputError."""
    if not isinstance(raw, dict):
        raise UserInputError("expected a mapping of settings", source=source)
    try:
        return GenerationConfig.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise UserInputError(first["msg"], source=source, field=field) from exc
