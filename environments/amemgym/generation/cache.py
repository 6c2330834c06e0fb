"""Per-user stage outputs on disk (``<out>/raw/<uuid>/<stage>.json``) so a rerun resumes."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from memevo.core.atomic_files import write_json_atomic


class StageCache:
    """Reads and atomically writes one user's stage files; ``reuse=False`` recomputes but still writes.

    Atomic writes (``store.write_json_atomic``) mean a killed run never leaves half a stage file.
    """

    def __init__(self, root: Path, *, reuse: bool = True) -> None:
        self.root = root
        self.reuse = reuse

    def path(self, stage: str) -> Path:
        return self.root / f"{stage}.json"

    def load(self, stage: str) -> Any | None:
        path = self.path(stage)
        if not self.reuse or not path.exists():
            return None
        return json.loads(path.read_text(encoding="utf-8"))

    def save(self, stage: str, value: Any) -> None:
        write_json_atomic(self.path(stage), value)

    async def get_or_run(self, stage: str, run: Callable[[], Awaitable[Any]]) -> Any:
        """The cached output of ``stage`` if present, else ``run()``'s result (then cached)."""
        cached = self.load(stage)
        if cached is not None:
            return cached
        value = await run()
        self.save(stage, value)
        return value

