"""The template simulator's part of the vocabulary file, and what every part of that file shares: its default
path, the strict base of its models and the check that names the file and the field of an error.

A module of its own so that a run with the template simulator creates only the models it reads: importing the
whole vocabulary (eight models with their constraints) took ~5 ms of every ``memevo eval``'s start.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memevo.core.errors import UserInputError
from memevo.core.lazy_model import LazyModel
from memevo.environments.amemgym.data.io import format_validation_error

DEFAULT_VOCABULARY = Path(__file__).resolve().parent.parent / "assets" / "synth_vocabulary.json"
Checked = TypeVar("Checked", bound=BaseModel)


class StrictPart(LazyModel):
    """A part of the vocabulary file: unknown keys are errors, and the words never change once read."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class SimulatorParts(StrictPart):
    """Follow-up pieces: ``deflections`` answer an assistant's question without giving state away."""

    deflections: list[str] = Field(min_length=1)
    acknowledgements: list[str]
    asks: list[str]


@cache
def load_simulator_parts(path: Path = DEFAULT_VOCABULARY) -> SimulatorParts:
    """Only the simulator's part of a vocabulary file: the template simulator needs no more, and checking the
    whole vocabulary (every pair of phrasings) took ~0.1 s of every ``memevo eval``."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))["simulator"]
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as error:
        raise UserInputError(f"cannot read the simulator part of the vocabulary: {error!r}", source=str(path)) from error
    return checked(SimulatorParts, raw, path, within="simulator")


def checked(model: type[Checked], raw: Any, path: Path, within: str | None = None) -> Checked:
    """``raw`` validated as ``model``; an error names the file and the field (under ``within``, its place)."""
    try:
        return model.model_validate(raw)
    except ValidationError as error:
        field, message = format_validation_error(error)
        if within is not None:
            field = f"{within}.{field}" if field else within
        raise UserInputError(message, source=str(path), field=field or None) from error
