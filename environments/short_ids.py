"""User ids as terminal lines show them: 8 characters, as git shortens a commit hash.

AMemGym names each user by a 36-character UUID; a progress line needs only enough of it to tell the run's users
apart. An id is cut to its first 8 characters, or to more where another id of the run shares those, so two users
never read alike. Records, CSV files and MLflow keep the full id.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

SHORT_ID_LENGTH = 8


def short_ids(ids: Iterable[str], length: int = SHORT_ID_LENGTH) -> dict[str, str]:
    """Each id's shortest prefix of at least ``length`` characters that no other id of ``ids`` begins with (the
    whole id when it is that short). Sorted, an id shares its longest common prefix with a neighbour."""
    ordered = sorted(set(ids))
    short = {}
    for position, user_id in enumerate(ordered):
        neighbours = ordered[max(position - 1, 0):position] + ordered[position + 1:position + 2]
        shared = max((len(os.path.commonprefix([user_id, other])) for other in neighbours), default=0)
        short[user_id] = user_id[:max(length, shared + 1)]
    return short


def short_user_id(user_id: str, among: Iterable[str]) -> str:
    """``user_id`` as a terminal line names it, unique among the run's users ``among``."""
    return short_ids([*among, user_id])[user_id]
