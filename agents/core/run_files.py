"""Reading back the files a run writes for itself, when one of them is damaged.

Every such file is written atomically, so a kill never leaves half of one; a damaged file was truncated, overwritten
or edited from outside (a failed copy, a full disk at another tool's write, a hand edit). Two outcomes, never a
traceback:

- a file that a resume recomputes the same from what else the folder holds (a summary, an outcome, a cached table)
  is set aside as ``<name>.damaged`` and computed again, and a warning line says so (``read_or_recompute``);
- any other ends the command (``DamagedFileError``, exit 2) with one line naming the file and what to do: restore it,
  or delete it (or the folder named) and resume (``read_model``, ``read_json``).
"""

from __future__ import annotations

import gzip
import json
import logging
import zlib
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from memevo.core.errors import DamagedFileError

log = logging.getLogger("memevo.environments")

Model = TypeVar("Model", bound=BaseModel)
SET_ASIDE_SUFFIX = ".damaged"
RESTORE = "restore it from a backup"


def delete_and_resume(what: str = "it", consequence: str = "") -> str:
    """The remedy ``restore it, or delete <what> and resume``, with what the resume then does."""
    return f"{RESTORE}, or delete {what} and resume" + (f" ({consequence})" if consequence else "")


def damage(error: BaseException) -> str:
    """What is wrong with a file, in a few words (no field dumps: the file's name says where)."""
    if isinstance(error, json.JSONDecodeError):
        at = "" if error.msg.endswith(" at") else " at"  # "Unterminated string starting at"
        return f"damaged: invalid JSON ({error.msg}{at} line {error.lineno} column {error.colno})"
    if isinstance(error, ValidationError):
        detail = error.errors()[0]
        if detail["type"] == "json_invalid":
            return f"damaged: invalid JSON ({detail.get('ctx', {}).get('error', detail['msg'])})"
        where = ".".join(str(part) for part in detail["loc"])
        return f"damaged: {f'field {where!r}: ' if where else ''}{detail['msg']}"
    if isinstance(error, CONTENT_ERRORS):
        return f"damaged: {error}" if str(error) else "damaged: cut short"
    return f"unreadable: {error}"


def load_json(path: Path) -> Any:
    """The JSON in ``path``, gunzipped when its name ends in ``.gz``; raises what a damaged file raises."""
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)


CONTENT_ERRORS = (EOFError, gzip.BadGzipFile, zlib.error, UnicodeDecodeError, ValueError)
"""What a file with damaged content raises on reading (``json.JSONDecodeError`` and ``ValidationError`` are
``ValueError``s); a file that cannot be opened at all raises another ``OSError``, which is no reason to set it aside."""
READ_ERRORS = (OSError, *CONTENT_ERRORS)


def read_json(path: Path, *, remedy: str) -> Any:
    """The JSON in ``path`` (gzipped when it ends in ``.gz``); a damaged file raises ``DamagedFileError``."""
    try:
        return load_json(path)
    except READ_ERRORS as error:
        raise DamagedFileError(damage(error), source=str(path), remedy=remedy) from None


def read_model(path: Path, model: type[Model], *, remedy: str) -> Model | None:
    """The record saved at ``path``, None when it was never written; a damaged one raises ``DamagedFileError``."""
    if not path.exists():
        return None
    try:
        return model.model_validate_json(path.read_bytes())
    except READ_ERRORS as error:
        raise DamagedFileError(damage(error), source=str(path), remedy=remedy) from None


def read_or_recompute(path: Path, model: type[Model]) -> Model | None:
    """The record saved at ``path``, or None (compute it again) when it was never written or is damaged; a damaged
    one is kept as ``<name>.damaged`` beside it, and a warning says so."""
    if not path.exists():
        return None
    try:
        return model.model_validate_json(path.read_bytes())
    except CONTENT_ERRORS as error:
        set_aside(path, damage(error), "it is computed again")
        return None


def set_aside(path: Path, reason: str, consequence: str, *, into: Path | None = None) -> Path:
    """Move a damaged file or folder out of the run's way, saying so: to ``<name>.damaged`` beside it, or to
    ``into/<name>`` (numbered ``-2``, ``-3`` when taken)."""
    first = into / path.name if into is not None else path.with_name(path.name + SET_ASIDE_SUFFIX)
    first.parent.mkdir(parents=True, exist_ok=True)
    target, number = first, 1
    while target.exists():
        number += 1
        target = first.with_name(f"{first.name}-{number}")
    path.rename(target)
    log.warning("%s: %s; set aside as %s, %s", path, reason, target, consequence)
    return target
