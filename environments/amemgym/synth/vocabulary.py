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

from pydantic import Field, model_validator

from memevo.core.errors import UserInputError
from memevo.environments.amemgym.synth.simulator_parts import DEFAULT_VOCABULARY, SimulatorParts, StrictPart, checked


class ValueText(StrictPart):
    """One allowed value of a variable, the sentences that reveal it, and the advice that fits it."""

    value: str
    phrasings: list[str] = Field(min_length=1)
    advice: str


class EventText(StrictPart):
    """A life event behind a change: ``event`` is third person (with ``{name}``), ``mention`` first person."""

    event: str
    mention: str


class Variable(StrictPart):
    """A state variable of one life domain, with at least three mutually exclusive values."""

    name: str
    related: list[str] = Field(min_length=1)
    questions: list[str] = Field(min_length=1)
    requests: list[str] = Field(min_length=1)
    events: list[EventText] = Field(min_length=1)
    values: list[ValueText] = Field(min_length=3)


class ProfileParts(StrictPart):
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


class QueryParts(StrictPart):
    greetings: list[str]
    filler_openers: list[str]
    filler_activities: list[str]
    filler_comments: list[str]


class Vocabulary(StrictPart):
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
    return checked(Vocabulary, raw, path)
