"""Reading config files and turning validation errors into messages that name the file and field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from memevo.agents.errors import UserInputError


def read_mapping(path: str | Path) -> dict[str, Any]:
    """A JSON or YAML file whose top level must be a mapping (YAML unless the suffix is .json)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise UserInputError(f"cannot read file: {error.strerror or error}", source=str(path)) from None
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as error:
        raise UserInputError(f"not valid {'JSON' if path.suffix.lower() == '.json' else 'YAML'}: {error}", source=str(path)) from None
    if not isinstance(data, dict):
        raise UserInputError(f"expected a mapping at the top level, got {type(data).__name__}", source=str(path))
    return data


def user_error(error: ValidationError, source: str, prefix: str = "") -> UserInputError:
    """The first validation problem as a ``UserInputError`` naming the dotted field path."""
    first = error.errors()[0]
    field = ".".join(str(part) for part in (*([prefix] if prefix else []), *first["loc"]))
    return UserInputError(first["msg"], source=source, field=field or None)
