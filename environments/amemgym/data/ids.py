"""User ids are data, not paths: the one place that turns an id into the name of its run folder.

A run keeps each user's records in ``users/<folder>``. An id made of letters, digits, ``.``, ``_`` and ``-``
is its own folder name; any other character is replaced by ``_`` (``"user 1"`` -> ``user_1``, ``"a/b"`` ->
``a_b``), so no id can name a path outside ``users/``. The mapping is stable (a pure function of the id) and
``validate_items`` refuses two ids that map to one folder and lists every mapped id, so it is shown.

Some ids have no safe, readable folder at all and are refused instead (``id_problem``): the empty id and
ids of dots only (``.``, ``..``: the folder itself or its parent), and ids longer than ``MAX_ID_LENGTH``
(file names end at 255 bytes; a longer id is almost always a pasted field, and a hashed name would hide
whose records a folder holds).
"""

from __future__ import annotations

import re

MAX_ID_LENGTH = 128
"""The longest id a folder is named after: half the 255-byte file-name limit of common file systems."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def folder_name(user_id: str) -> str:
    """The folder a user's records live in: the id with every character outside ``A-Za-z0-9._-`` replaced by ``_``."""
    return _UNSAFE.sub("_", user_id)


def id_problem(user_id: str) -> str | None:
    """Why ``user_id`` cannot name a run folder (one sentence), or None when it can."""
    if not user_id:
        return "the id is empty; every user needs an id, which names its folder in a run"
    if set(folder_name(user_id)) == {"."}:
        return f"the id {user_id!r} would name the run folder itself or its parent, not a folder of its own; rename it"
    if len(user_id) > MAX_ID_LENGTH:
        return (f"the id is {len(user_id)} characters long; it names the user's folder in a run, where at most "
                f"{MAX_ID_LENGTH} fit: shorten it")
    return None


def is_mapped(user_id: str) -> bool:
    """Whether the id's folder has another name than the id itself."""
    return folder_name(user_id) != user_id
