"""The external memory store of the RAG and AWE agents: one SQLite table of timestamped texts.

It replaces AMemGym's mem0 + Milvus dependency (reference I.23). Timestamps are simulated time
(I.11). Ids are never reused after a delete, and every change is logged in a history table, like
mem0's history database. ``dump``/``restore`` give an exact JSON round trip so the runner can save
and restore per-period snapshots through ``MemoryAgent.state()``.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import Any

from memevo.core.lazy_model import LazyModel

_SCHEMA = """
CREATE TABLE memories (id INTEGER PRIMARY KEY, text TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE TABLE history (seq INTEGER PRIMARY KEY, memory_id INTEGER NOT NULL, event TEXT NOT NULL,
                      old_text TEXT, new_text TEXT, at TEXT NOT NULL);
CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT INTO meta VALUES ('next_id', 0);
"""


class StoredMemory(LazyModel):
    """One memory row."""

    id: int
    text: str
    created_at: datetime
    updated_at: datetime


class MemoryStore:
    """SQLite-backed memory list; ``path`` ':memory:' (default) keeps it in process.

    One agent uses its store from one coroutine at a time, but the runner may hop threads (a sync
    bridge), so the connection is not pinned to the creating thread.
    """

    def __init__(self, path: str = ":memory:") -> None:
        self._db = sqlite3.connect(path, check_same_thread=False)
        if not self._db.execute("SELECT name FROM sqlite_master WHERE name = 'memories'").fetchone():
            self._db.executescript(_SCHEMA)

    def all(self) -> list[StoredMemory]:
        """Every memory in id (insertion) order."""
        rows = self._db.execute("SELECT id, text, created_at, updated_at FROM memories ORDER BY id")
        return [StoredMemory(id=r[0], text=r[1], created_at=r[2], updated_at=r[3]) for r in rows]

    def __len__(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM memories").fetchone()[0]

    def add(self, text: str, at: datetime) -> int:
        with self._db:
            memory_id = self._db.execute("SELECT value FROM meta WHERE key = 'next_id'").fetchone()[0]
            self._db.execute("UPDATE meta SET value = ? WHERE key = 'next_id'", (memory_id + 1,))
            self._db.execute(
                "INSERT INTO memories VALUES (?, ?, ?, ?)", (memory_id, text, at.isoformat(), at.isoformat())
            )
            self._log(memory_id, "add", None, text, at)
        return memory_id

    def update(self, memory_id: int, text: str, at: datetime) -> None:
        with self._db:
            old = self._text(memory_id)
            self._db.execute(
                "UPDATE memories SET text = ?, updated_at = ? WHERE id = ?", (text, at.isoformat(), memory_id)
            )
            self._log(memory_id, "update", old, text, at)

    def delete(self, memory_id: int, at: datetime) -> None:
        with self._db:
            old = self._text(memory_id)
            self._db.execute("DELETE FROM memories WHERE id = ?", (memory_id,))
            self._log(memory_id, "delete", old, None, at)

    def history(self) -> list[dict[str, Any]]:
        """The change log, oldest first."""
        cursor = self._db.execute("SELECT seq, memory_id, event, old_text, new_text, at FROM history ORDER BY seq")
        columns = [c[0] for c in cursor.description]
        return [dict(zip(columns, row, strict=True)) for row in cursor]

    def dump(self) -> dict[str, Any]:
        """All tables as JSON-serializable data."""
        return {
            "memories": [m.model_dump(mode="json") for m in self.all()],
            "history": self.history(),
            "next_id": self._db.execute("SELECT value FROM meta WHERE key = 'next_id'").fetchone()[0],
        }

    def restore(self, data: dict[str, Any]) -> None:
        """Replace the contents with a ``dump``."""
        memories = [StoredMemory.model_validate(m) for m in data["memories"]]
        with self._db:
            self._db.execute("DELETE FROM memories")
            self._db.execute("DELETE FROM history")
            self._db.execute("UPDATE meta SET value = ? WHERE key = 'next_id'", (int(data["next_id"]),))
            self._db.executemany(
                "INSERT INTO memories VALUES (?, ?, ?, ?)",
                [(m.id, m.text, m.created_at.isoformat(), m.updated_at.isoformat()) for m in memories],
            )
            self._db.executemany(
                "INSERT INTO history VALUES (:seq, :memory_id, :event, :old_text, :new_text, :at)", data["history"]
            )

    def close(self) -> None:
        self._db.close()

    def _text(self, memory_id: int) -> str:
        row = self._db.execute("SELECT text FROM memories WHERE id = ?", (memory_id,)).fetchone()
        if row is None:
            raise KeyError(f"no memory with id {memory_id}")
        return row[0]

    def _log(self, memory_id: int, event: str, old: str | None, new: str | None, at: datetime) -> None:
        self._db.execute(
            "INSERT INTO history (memory_id, event, old_text, new_text, at) VALUES (?, ?, ?, ?, ?)",
            (memory_id, event, old, new, at.isoformat()),
        )
