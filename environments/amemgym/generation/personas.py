"""Stages C.0 (persona sampling) and C.1 (profile formatting).

Personas come from any file with Nemotron-Personas' columns (parquet, CSV, JSON or JSONL). Missing
values stay missing (the reference's ``fillna("")`` turned every absent bachelors field into
``"high_school ()"``, I.24), and list columns are parsed with ``ast.literal_eval``, never ``eval``.
"""

from __future__ import annotations

import ast
import math
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import ConfigDict

from memevo.agents.llm.protocol import ChatClient
from memevo.core.errors import UserInputError
from memevo.core.lazy_model import LazyModel
from memevo.environments.amemgym.data.models import UserProfile
from memevo.environments.amemgym.generation.ask import ask_json, object_schema, prompt, string_schema
from memevo.environments.amemgym.generation.config import GenerationConfig

REQUIRED_COLUMNS = ("uuid", "persona", "sex", "age", "marital_status", "education_level", "occupation")
LIST_COLUMNS = ("skills_and_expertise_list", "hobbies_and_interests_list")
FREE_TEXT_COLUMNS = (
    "persona",
    "professional_persona",
    "sports_persona",
    "arts_persona",
    "travel_persona",
    "culinary_persona",
    "career_goals_and_ambitions",
    "skills_and_expertise",
    "hobbies_and_interests",
)
SUMMARY_MAX_WORDS = 500


class Persona(LazyModel):
    """One Nemotron-Personas row; optional columns are None when absent or blank."""

    model_config = ConfigDict(extra="ignore")

    uuid: str
    persona: str
    professional_persona: str | None = None
    sports_persona: str | None = None
    arts_persona: str | None = None
    travel_persona: str | None = None
    culinary_persona: str | None = None
    skills_and_expertise: str | None = None
    skills_and_expertise_list: list[str] = []
    hobbies_and_interests: str | None = None
    hobbies_and_interests_list: list[str] = []
    career_goals_and_ambitions: str | None = None
    sex: str
    age: int
    marital_status: str
    education_level: str
    bachelors_field: str | None = None
    occupation: str
    city: str | None = None
    state: str | None = None
    zipcode: str | None = None
    country: str | None = None


def read_persona_table(path: Path) -> pd.DataFrame:
    """Load the persona file by its extension; errors name the file."""
    if not path.exists():
        raise UserInputError("persona file not found", source=str(path))
    readers = {
        ".parquet": pd.read_parquet,
        ".csv": lambda p: pd.read_csv(p, dtype={"zipcode": str}),
        ".json": lambda p: pd.read_json(p, dtype=False),
        ".jsonl": lambda p: pd.read_json(p, lines=True, dtype=False),
    }
    reader = readers.get(path.suffix.lower())
    if reader is None:
        raise UserInputError(f"unsupported persona file type {path.suffix!r}; use {sorted(readers)}", source=str(path))
    try:
        table = reader(path)
    except (ValueError, OSError) as exc:
        raise UserInputError(f"cannot read personas: {exc}", source=str(path)) from exc
    missing = [column for column in REQUIRED_COLUMNS if column not in table.columns]
    if missing:
        raise UserInputError(f"missing persona columns {missing}", source=str(path), field=missing[0])
    return table


def sample_personas(config: GenerationConfig) -> list[Persona]:
    """C.0: seeded sample of ``num_user_profiles`` rows after excluding ``exclude_ids``."""
    path = config.personas_path
    table = read_persona_table(path)
    table = table[~table["uuid"].astype(str).isin(config.exclude_ids)]
    if len(table) < config.num_user_profiles:
        raise UserInputError(
            f"only {len(table)} personas available, {config.num_user_profiles} requested",
            source=str(path),
            field="num_user_profiles",
        )
    sampled = table.sample(n=config.num_user_profiles, random_state=config.seed)
    return [persona_from_row(row, source=f"{path} row {index}") for index, row in sampled.iterrows()]


def persona_from_row(row: pd.Series, *, source: str) -> Persona:
    values: dict[str, Any] = {}
    for column, raw in row.items():
        value = _blank_to_none(raw)
        if column in LIST_COLUMNS:
            value = _parse_list(value, source=source, field=str(column))
        elif value is not None and column not in ("age",):
            value = str(value)
        if value is not None:
            values[str(column)] = value
    try:
        return Persona.model_validate(values)
    except ValueError as exc:
        raise UserInputError(str(exc), source=source) from exc


def _blank_to_none(value: Any) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, str) and not value.strip():
        return None
    return value


def _parse_list(value: Any, *, source: str, field: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError) as exc:
            raise UserInputError(f"not a list literal: {value[:60]!r}", source=source, field=field) from exc
    if not isinstance(value, (list, tuple)) and not hasattr(value, "tolist"):
        raise UserInputError("expected a list", source=source, field=field)
    return [str(entry) for entry in (value.tolist() if hasattr(value, "tolist") else value)]


def basic_profile(persona: Persona) -> dict[str, Any]:
    """The deterministic part of the profile (A.2), before the LLM adds name and summary."""
    education = persona.education_level
    if persona.bachelors_field:
        education = f"{education} ({persona.bachelors_field})"
    return {
        "uuid": persona.uuid,
        "age": persona.age,
        "gender": persona.sex,
        "marital_status": persona.marital_status,
        "education_level": education,
        "occupation": persona.occupation,
        "hobbies_and_interests": ", ".join(persona.hobbies_and_interests_list) or "N/A",
        "skills_and_expertise": ", ".join(persona.skills_and_expertise_list) or "N/A",
    }


PROFILE_KEYS = (
    "name",
    "age",
    "gender",
    "marital_status",
    "education_level",
    "occupation",
    "hobbies_and_interests",
    "skills_and_expertise",
    "complementary_info",
)

PROFILE_SCHEMA = object_schema({"name": string_schema(), "complementary_info": string_schema()})


def _profile_problems(parsed: Any) -> list[str]:
    if not isinstance(parsed, dict):
        return ["reply must be a JSON object with 'name' and 'complementary_info'"]
    problems = [f"'{key}' must be a non-empty string" for key in ("name", "complementary_info")
                if not isinstance(parsed.get(key), str) or not parsed[key].strip()]
    if not problems and len(parsed["complementary_info"].split()) > SUMMARY_MAX_WORDS:
        problems.append(f"'complementary_info' must be at most {SUMMARY_MAX_WORDS} words")
    return problems


async def format_profile(llm: ChatClient, persona: Persona, config: GenerationConfig) -> dict[str, Any]:
    """C.1: the LLM extracts the full name and condenses the free-text fields; the rest is copied."""
    texts = "\n".join(
        f"{column}: {getattr(persona, column)}" for column in FREE_TEXT_COLUMNS if getattr(persona, column)
    )
    messages = prompt(
        "You turn persona descriptions into concise user profiles. Reply with JSON.",
        (
            f"Persona description:\n{texts}\n\n"
            "Return a JSON object with:\n"
            '- "name": the person\'s full name as written in the description, or "N/A" if none is given;\n'
            f'- "complementary_info": a factual summary (under {SUMMARY_MAX_WORDS} words) of the personality, '
            "work, interests, habits and goals described above."
        ),
    )
    parsed = await ask_json(
        llm,
        messages,
        stage="profile",
        schema=PROFILE_SCHEMA,
        validate=_profile_problems,
        temperature=config.low_temperature,
        repair_turns=config.repair_turns,
    )
    profile = basic_profile(persona) | {"name": parsed["name"].strip(), "complementary_info": parsed["complementary_info"].strip()}
    profile["formatted_str"] = "\n".join(f"{key}: {profile[key]}" for key in PROFILE_KEYS)
    return UserProfile.model_validate(profile).model_dump()
