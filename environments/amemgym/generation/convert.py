"""Stage C.13: the cached stage outputs of one user become an ``Item`` (section A)."""

from __future__ import annotations

import random
from typing import Any

from memevo.environments.amemgym.data.models import Item
from memevo.environments.amemgym.generation.timing import session_times


def build_item(
    profile: dict[str, Any],
    start_date: str,
    state_schema: dict[str, list[str]],
    states: list[dict[str, str]],
    records: list[dict[str, Any] | None],
    sessions: list[list[dict[str, Any]]],
    qas: list[dict[str, Any]],
    rng: random.Random,
) -> Item:
    """Assemble periods with C.12 timestamps; ``records[0]`` is None (period 0 has no update record).

    ``update_cnts`` is the final total per variable, copied into every period, exactly as AMemGym's
    files have it (I.25), so existing readers see the same data.
    """
    totals = {name: sum(1 for record in records[1:] if record and name in record["updated"]) for name in state_schema}
    periods = []
    for index, (state, record, period_sessions) in enumerate(zip(states, records, sessions)):
        end = record["period_end"] if record else start_date
        times = session_times(end, len(period_sessions), rng)
        if record:
            updates = {name: {"old": record["old"][name], "new": value} for name, value in record["updated"].items()}
        else:
            updates = {name: {"old": None, "new": value} for name, value in state.items()}
        periods.append({
            "period_start": record["period_start"] if record else None,
            "period_end": end,
            "period_summary": record["period_summary"] if record else None,
            "sessions": [session | {"messages": [], "session_time": stamp} for session, stamp in zip(period_sessions, times)],
            "state": state,
            "updates": updates,
            "update_cnts": dict(totals),
        })
    return Item.model_validate({
        "id": profile["uuid"],
        "start_time": start_date,
        "user_profile": profile,
        "state_schema": state_schema,
        "periods": periods,
        "qas": qas,
    })
