"""Simulated calendar: period boundaries and session timestamps as AMemGym builds them (reference C.12)."""

from __future__ import annotations

import calendar
import datetime as dt
import random

DATE_FORMAT = "%Y-%m-%d"
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
_EVENING_START_S = 19 * 3600
_EVENING_END_S = 22 * 3600


def add_months(day: dt.date, months: int) -> dt.date:
    """``day`` moved by whole months, clamping the day of month (Jan 31 + 1 month = Feb 28/29)."""
    month_index = day.month - 1 + months
    year, month = day.year + month_index // 12, month_index % 12 + 1
    return dt.date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def period_bounds(start: dt.date, periods: int, months_per_period: int) -> list[tuple[dt.date | None, dt.date]]:
    """(period_start, period_end) for period 0 (None, start) and each update period."""
    bounds: list[tuple[dt.date | None, dt.date]] = [(None, start)]
    for index in range(1, periods + 1):
        bounds.append((add_months(start, months_per_period * (index - 1)),
                       add_months(start, months_per_period * index)))
    return bounds


def session_times(rng: random.Random, count: int, end: dt.date) -> list[str]:
    """The last ``count`` days up to and including ``end``, each at a random time from 19:00 to 22:00."""
    times = []
    for offset in range(count - 1, -1, -1):
        day = dt.datetime.combine(end - dt.timedelta(days=offset), dt.time())
        seconds = rng.randrange(_EVENING_START_S, _EVENING_END_S)
        times.append((day + dt.timedelta(seconds=seconds)).strftime(TIME_FORMAT))
    return times
