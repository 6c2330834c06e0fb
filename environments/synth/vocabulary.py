"""The procedural generator's vocabulary: state variables with hand-written phrasings, profile parts, filler.

The words live in a JSON asset (``assets/synth_vocabulary.json``) so they can be read, reviewed and
swapped without touching code; this module only types and checks them. The checks guard the property
the generator promises: an opening query exposes exactly the values whose phrasings it contains, so no
phrasing may contain another value's phrasing.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from memevo.agents.errors import UserInputError
from memevo.agents.lazy_model import LazyModel
from memevo.environments.data.io import format_validation_error

DEFAULT_VOCABULARY = Path(__file__).resolve().parent.parent / "assets" / "synth_vocabulary.json"
Checked = TypeVar("Checked", bound=BaseModel)


class _Strict(LazyModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ValueText(_Strict):
    """One allowed value of a variable, the sentences that reveal it, and the advice that fits it."""

    value: str
    phrasings: list[str] = Field(min_length=1)
    advice: str


class EventText(_Strict):
    """A life event behind a change: ``event`` is third person (with ``{name}``), ``mention`` first person."""

    event: str
    mention: str


class Variable(_Strict):
    """A state variable of one life domain, with at least three mutually exclusive values."""

    name: str
    related: list[str] = Field(min_length=1)
    questions: list[str] = Field(min_length=1)
    requests: list[str] = Field(min_length=1)
    events: list[EventText] = Field(min_length=1)
    values: list[ValueText] = Field(min_length=3)


class ProfileParts(_Strict):
    female_names: list[str]
    male_names: list[str]
    last_names: list[str]
    marital_statuses: list[str]
    education_levels: list[str]
    occupations: list[str]
    hobbies: list[str]
    skills: list[str]
    hometowns: list[str]
    traits: list[str]


class QueryParts(_Strict):
    greetings: list[str]
    filler_openers: list[str]
    filler_activities: list[str]
    filler_comments: list[str]


class SimulatorParts(_Strict):
    """Follow-up pieces: ``deflections`` answer an assistant's question without giving state away."""

    deflections: list[str] = Field(min_length=1)
    acknowledgements: list[str]
    asks: list[str]


class Vocabulary(_Strict):
    variables: list[Variable]
    profile: ProfileParts
    queries: QueryParts
    simulator: SimulatorParts

    @model_validator(mode="after")
    def _check_consistency(self) -> Vocabulary:
        names = [variable.name for variable in self.variables]
        if len(set(names)) != len(names):
            raise ValueError("variable names must be unique")
        for variable in self.variables:
            unknown = [name for name in variable.related if name not in names or name == variable.name]
            if unknown:
                raise ValueError(f"variable {variable.name!r}: related names {unknown} are not other variables")
        phrasings = [(v.name, value.value, p, p.lower())  # lowered once: the check below is quadratic
                     for v in self.variables for value in v.values for p in value.phrasings]
        for owner_var, owner_value, phrasing, lowered in phrasings:
            for other_var, other_value, _, other in phrasings:
                if other in lowered and (owner_var, owner_value) != (other_var, other_value):
                    raise ValueError(
                        f"phrasing {phrasing!r} of {owner_var}={owner_value!r} contains the phrasing of "
                        f"{other_var}={other_value!r}"
                    )
        return self

    def variable(self, name: str) -> Variable:
        """The variable called ``name``."""
        for variable in self.variables:
            if variable.name == name:
                return variable
        raise KeyError(name)

    def all_phrasings(self) -> list[tuple[str, str, str]]:
        """(variable, value, phrasing) for every phrasing, in vocabulary order."""
        return [(v.name, value.value, p) for v in self.variables for value in v.values for p in value.phrasings]


@cache
def load_vocabulary(path: Path = DEFAULT_VOCABULARY) -> Vocabulary:
    """Read and check a vocabulary file; errors name the file and the field."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise UserInputError(f"cannot read vocabulary: {error}", source=str(path)) from error
    return _checked(Vocabulary, raw, path)


@cache
def load_simulator_parts(path: Path = DEFAULT_VOCABULARY) -> SimulatorParts:
    """Only the simulator's part of a vocabulary file: the template simulator needs no more, and checking the
    whole vocabulary (every pair of phrasings) took ~0.1 s of every ``memevo eval``."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))["simulator"]
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as error:
        raise UserInputError(f"cannot read the simulator part of the vocabulary: {error!r}", source=str(path)) from error
    return _checked(SimulatorParts, raw, path, within="simulator")


def _checked(model: type[Checked], raw: Any, path: Path, within: str | None = None) -> Checked:
    """``raw`` validated as ``model``; an error names the file and the field (under ``within``, its place)."""
    try:
        return model.model_validate(raw)
    except ValidationError as error:
        field, message = format_validation_error(error)
        if within is not None:
            field = f"{within}.{field}" if field else within
        raise UserInputError(message, source=str(path), field=field or None) from error
