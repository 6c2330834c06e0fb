"""How a simulated date reaches an agent's context: a session's date before its first message (native), a memory's
date before its text (retrieved memories, notes), and ``{today}`` in prompts.

Temporal questions ("when did ...?") can only be answered from dates the agent was shown; LoCoMo's own baseline
writes the date before each session. AMemGym's agents saw none, so under ``amemgym_compat`` nothing is added.
"""

from __future__ import annotations

from datetime import datetime


def spoken_date(at: datetime) -> str:
    """``at`` as a date and time the way people write them, e.g. ``8 May 2023, 13:56``."""
    return f"{at.day} {at:%B %Y, %H:%M}"


def session_header(at: datetime) -> str:
    """The line put before a session's first message."""
    return f"DATE: {spoken_date(at)}"


def dated(text: str, at: datetime) -> str:
    """A memory's text with the date it was written or last changed."""
    return f"[{spoken_date(at)}] {text}"


def today(at: datetime) -> str:
    """The ``{today}`` placeholder's value: the simulated date, ISO-formatted."""
    return at.date().isoformat()
