"""Simulated calendar: period boundaries and session timestamps (C.12)."""

from __future__ import annotations

import calendar
import random
from datetime import date, datetime, time, timedelta


def add_months(start: date, months: int) -> date:
    """``start`` moved by whole months, clamping the day to the target month's length."""
    month_index = start.month - 1 + months
    year, month = start.year + month_index // 12, month_index % 12 + 1
    return date(year, month, min(start.day, calendar.monthrange(year, month)[1]))


def period_bounds(start_date: str, period: int, months_per_period: int) -> tuple[str | None, str]:
    """(period_start, period_end) as in A.3: period 0 is ``(None, start)``, period p ends at start + p periods."""
    start = date.fromisoformat(start_date)
    end = add_months(start, period * months_per_period)
    if period == 0:
        return None, end.isoformat()
    return add_months(start, (period - 1) * months_per_period).isoformat(), end.isoformat()


def session_times(reference: str, count: int, rng: random.Random) -> list[str]:
    """The last ``count`` days up to and including ``reference``, each at a random time 19:00-22:00, sorted."""
    last = date.fromisoformat(reference)
    stamps = []
    for offset in range(count - 1, -1, -1):
        day = last - timedelta(days=offset)
        seconds = rng.randint(0, 3 * 3600)
        stamps.append(datetime.combine(day, time(19)) + timedelta(seconds=seconds))
    return [stamp.strftime("%Y-%m-%d %H:%M:%S") for stamp in sorted(stamps)]
