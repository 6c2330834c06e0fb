"""The progress an evolution or ablation shows: memevo's log lines and one bar per phase.

The phases are the ones a person waits for: a generation's candidates, one candidate's users x
periods on a split (nested, it disappears when done), and the final scoring on the test users. Each is
a context manager yielding a ``Phase``; the loop calls ``advance()`` once per finished unit (the
runner's ``on_period`` callback for periods). Bars are drawn only on a terminal.
"""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager

from memevo.environments.progress import Phase, configure_terminal, phase

log = logging.getLogger("memevo.evolve")


def show_progress() -> None:
    """memevo's own lines at INFO; third-party request logs off (see ``memevo.environments.progress``)."""
    configure_terminal()


def candidates_phase(generation: int, total: int) -> AbstractContextManager[Phase]:
    return phase(f"generation {generation}", total, "candidate")


def evaluation_phase(label: str, split: str, periods: int) -> AbstractContextManager[Phase]:
    """One candidate on one split; a unit is one user's period (so the ETA moves within a user), ``periods``
    the sum over the split's users."""
    log.info("scoring %s on the %s users (%d periods)", label, split, periods)
    return phase(f"{label} {split}", periods, "period", nested=True)


def test_phase(periods: int) -> AbstractContextManager[Phase]:
    """Seed and best on the test users at the end of the run (``periods``: over both and every test user)."""
    log.info("scoring seed and best on the test users (%d periods)", periods)
    return phase("test scoring", periods, "period")
