"""On-disk record of a run: per user and period, the results and the agent state, written atomically.

A period counts as finished only when its result file exists and so do those of all earlier periods;
its state is written before its result, so a run killed at any instant leaves either a finished period or
nothing for it. Resuming loads the last finished period's state into a fresh agent and continues from the
next period (the reference re-wrote its whole results matrix after every question instead; I.22). Only
the newest state is kept: resuming needs no other, and a native agent's state is its whole history, so
keeping one per period made a run's output grow with the square of its length.

Layout: ``<root>/users/<user>/meta.json``, ``period_XX.json.gz`` per period, ``period_XX.state.json.gz``
for the last one (``zcat`` shows them). Period files are compact, gzipped JSON: the indenting encoder is
pure Python and was the largest CPU cost of saving a period, and histories compress several-fold. Folders
written before (plain ``.json``) still load and resume.
"""

from __future__ import annotations

import asyncio
import gzip
from pathlib import Path
from typing import Any

import orjson

from memevo.core.atomic_files import write_bytes_atomic, write_json_atomic
from memevo.core.errors import DamagedFileError, UserInputError
from memevo.core.run_files import CONTENT_ERRORS, damage, delete_and_resume, load_json, read_json, set_aside
from memevo.environments.amemgym.data.ids import folder_name, id_problem
from memevo.environments.records import EpisodeResult, PeriodResult

DAMAGED_USERS = "users.damaged"
"""Where ``bind`` moves a user's folder holding a damaged file, beside ``users``."""


def _gzipped(data: bytes) -> bytes:
    """Fastest gzip level: most of the size for little CPU; ``mtime=0`` keeps equal records byte-identical."""
    return gzip.compress(data, compresslevel=1, mtime=0)


class RunStore:
    """Per user/period records of one run under ``root``."""

    def __init__(self, root: Path, *, owner: Path | None = None) -> None:
        self.root = Path(root)
        self.owner = owner
        """The folder to delete so that a resume plays a user of this store again, when the user's own folder is
        not enough (an evolution's candidate: its summaries say it was evaluated)."""

    def user_dir(self, user_id: str) -> Path:
        """``users/<folder>`` (``data.ids``); an id that names no folder of its own never reaches the disk
        (the data checks refuse it first, this is the last guard)."""
        problem = id_problem(user_id)
        if problem is not None:
            raise UserInputError(problem, source=str(self.root), field="id")
        return self.root / "users" / folder_name(user_id)

    def _result_path(self, user_id: str, period: int) -> Path:
        return self.user_dir(user_id) / f"period_{period:02d}.json.gz"

    def _state_path(self, user_id: str, period: int) -> Path:
        return self.user_dir(user_id) / f"period_{period:02d}.state.json.gz"

    def bind(self, user_id: str, *, policy_id: str, item_id: str, protocol: dict[str, Any] | None = None) -> None:
        """Record which policy, item and protocol a user's folder belongs to; refuse to resume another."""
        path = self.user_dir(user_id) / "meta.json"
        meta = {"user_id": user_id, "policy_id": policy_id, "item_id": item_id, "protocol": protocol}
        self._set_aside_if_damaged(user_id)
        if path.exists():
            stored = self._read(user_id, path)
            for key, value in meta.items():
                if stored.get(key) != value:
                    raise UserInputError(
                        f"run folder holds {key}={stored.get(key)!r}, not {value!r}; use a new run folder",
                        source=str(path),
                        field=key,
                    )
            return
        write_json_atomic(path, meta)

    def _set_aside_if_damaged(self, user_id: str) -> None:
        """Before a user's run continues: when a file it would read back (meta, a finished period, the last state)
        is damaged, move the user's folder to ``users.damaged/`` and say so; the user is played again from its
        first period, as on a first start (its answers come from the response cache where it still has them)."""
        folder = self.user_dir(user_id)
        if not folder.is_dir():
            return
        done = self.finished_periods(user_id)
        paths = [folder / "meta.json", *(_existing(self._result_path(user_id, p)) for p in range(done))]
        if done:
            paths.append(_existing(self._state_path(user_id, done - 1)))
        for path in paths:
            if path is None or not path.exists():
                continue
            try:
                load_json(path)
            except CONTENT_ERRORS as error:
                set_aside(folder, f"{path.name} is {damage(error)}", "its user is played again from the first period",
                          into=self.root / DAMAGED_USERS)
                return

    def _remedy(self, user_id: str) -> str:
        return delete_and_resume(f"the folder {self.owner or self.user_dir(user_id)}",
                                 "what it holds is played again")

    def _read(self, user_id: str, path: Path) -> Any:
        return read_json(path, remedy=self._remedy(user_id))

    def save_period(self, result: PeriodResult, state: dict[str, Any]) -> None:
        """Persist one finished period: state first, result next (the result marks completion), then drop
        the earlier periods' states, which nothing needs any more (a run killed before its last drop left one)."""
        # Compact UTF-8 JSON straight to bytes by orjson: json's encoder took ~4 ms per period for a long native
        # history; for the result, pydantic's own serializer gave the same bytes in ~4 times orjson's time (1.8 ms
        # for an AMemGym-sized native period), holding the GIL the event loop needs meanwhile.
        write_bytes_atomic(self._state_path(result.user_id, result.period), _gzipped(orjson.dumps(state)))
        write_bytes_atomic(self._result_path(result.user_id, result.period),
                           _gzipped(orjson.dumps(result.model_dump())))
        for earlier in range(result.period):
            for path in _both_forms(self._state_path(result.user_id, earlier)):
                path.unlink(missing_ok=True)

    async def save_period_async(self, result: PeriodResult, state: dict[str, Any]) -> None:
        """``save_period`` on a worker thread: the event loop keeps serving other users while this one's
        files are written and synced (the runner starts the user's next period meanwhile)."""
        await asyncio.to_thread(self.save_period, result, state)

    def finished_periods(self, user_id: str) -> int:
        """How many periods, counted from period 0 without gaps, are finished (with the last one's state)."""
        count = 0
        while _existing(self._result_path(user_id, count)) is not None:
            count += 1
        while count and _existing(self._state_path(user_id, count - 1)) is None:  # only if files were removed by hand
            count -= 1
        return count

    def load_period(self, user_id: str, period: int) -> PeriodResult:
        path = _existing(self._result_path(user_id, period)) or self._result_path(user_id, period)
        data = self._read(user_id, path)
        try:
            return PeriodResult.model_validate(data)
        except ValueError as error:
            raise DamagedFileError(damage(error), source=str(path), remedy=self._remedy(user_id)) from None

    def load_state(self, user_id: str, period: int) -> dict[str, Any]:
        return self._read(user_id, _existing(self._state_path(user_id, period)) or self._state_path(user_id, period))

    def load_episode(self, user_id: str) -> EpisodeResult | None:
        """The finished periods of one user, or None if the user has no folder yet."""
        meta_path = self.user_dir(user_id) / "meta.json"
        if not meta_path.exists():
            return None
        meta = self._read(user_id, meta_path)
        periods = [self.load_period(user_id, p) for p in range(self.finished_periods(user_id))]
        return EpisodeResult(user_id=user_id, policy_id=meta["policy_id"], periods=periods)


def _both_forms(path: Path) -> tuple[Path, Path]:
    """A period file as written now (gzipped) and as written before (plain ``.json``)."""
    return path, path.with_suffix("")


def _existing(path: Path) -> Path | None:
    """The form of a period file that exists, gzipped first; None when neither does."""
    return next((form for form in _both_forms(path) if form.exists()), None)
