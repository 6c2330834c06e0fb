"""Reading config files and turning validation errors into messages that name the file and field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from memevo.core.errors import UserInputError


def read_mapping(path: str | Path) -> dict[str, Any]:
    """A JSON or YAML file whose top level must be a mapping (YAML unless the suffix is .json)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise UserInputError(f"cannot read file: {error.strerror or error}", source=str(path)) from None
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else _yaml_load(text)
    except ValueError as error:  # json.JSONDecodeError, or yaml.YAMLError re-raised as one by _yaml_load
        raise UserInputError(f"not valid {'JSON' if path.suffix.lower() == '.json' else 'YAML'}: {error}", source=str(path)) from None
    if not isinstance(data, dict):
        raise UserInputError(f"expected a mapping at the top level, got {type(data).__name__}", source=str(path))
    return data


def _yaml_load(text: str) -> Any:
    """YAML parsed by PyYAML, imported only here: a JSON config (AMemGym's agent files) does not pay ~20 ms of
    start-up for it. A YAML error comes out as a ValueError."""
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ValueError(str(error)) from None


def user_error(error: ValidationError, source: str, prefix: str = "") -> UserInputError:
    """The first validation problem as a ``UserInputError`` naming the dotted field path."""
    first = error.errors()[0]
    field = ".".join(str(part) for part in (*([prefix] if prefix else []), *first["loc"]))
    return UserInputError(first["msg"], source=source, field=field or None)
