"""Files written whole or not at all: a temporary file in the same folder, synced, then renamed over the target.

Every run record memevo resumes from goes through these, so a kill at any instant leaves the old file or the new one.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON to a temporary file in the same folder, then rename it over ``path``."""
    write_text_atomic(path, json.dumps(data, ensure_ascii=False, indent=1))


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file in the same folder, then rename it over ``path``: a kill
    mid-write leaves the old file or the new one, never half of one."""
    write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """``write_text_atomic`` for bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
