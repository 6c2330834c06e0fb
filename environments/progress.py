"""What a long command shows in the terminal: memevo's own log lines and progress bars, nothing else.

Third-party libraries log every HTTP request at INFO (``httpx``, ``httpx2`` under openai, ``LiteLLM``)
and MLflow installs its own handler; either would bury memevo's lines. So the root logger stays at
WARNING and only the ``memevo`` logger speaks at INFO; libraries that set up their own handlers or
levels are lowered by name (``memevo.core.library_log.LIBRARY_LEVELS``); during a run their warnings go to the run's
log file instead (``memevo.core.library_log``). Progress bars come from tqdm: one bar per phase, with an ETA, drawn only
when stderr is a terminal (a log file or CI gets the log lines alone). Log lines are written through
tqdm so they do not tear a bar in half.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from memevo.core.library_log import LIBRARY_LEVELS

if TYPE_CHECKING:
    from tqdm import tqdm

MEMEVO_LOGGER = "memevo"


class _TqdmHandler(logging.StreamHandler):
    """Writes records above any active bar instead of through it."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            _bar_class().write(self.format(record), file=sys.stderr)
        except Exception:  # noqa: BLE001 - logging must never raise into the caller
            self.handleError(record)


def configure_terminal(level: int = logging.INFO) -> None:
    """memevo's lines at ``level`` with a timestamp; every library held to its level in LIBRARY_LEVELS."""
    root = logging.getLogger()
    if not any(isinstance(handler, _TqdmHandler) for handler in root.handlers):
        handler = _TqdmHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", datefmt="%H:%M:%S"))
        root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger(MEMEVO_LOGGER).setLevel(level)
    for name, library_level in LIBRARY_LEVELS.items():
        logging.getLogger(name).setLevel(library_level)


def _bar_class() -> type[tqdm]:
    """tqdm, imported when a bar is drawn or a line written: a run whose stderr is not a terminal (a log file,
    CI, a benchmark) does not load it (~10 ms of start-up, and its monitor thread)."""
    from tqdm import tqdm

    return tqdm


class Phase:
    """One running phase of work with a known size; ``advance`` after each finished unit (no bar: nothing shown)."""

    def __init__(self, bar: tqdm | None) -> None:
        self._bar = bar

    def advance(self, units: int = 1) -> None:
        if self._bar is not None:
            self._bar.update(units)

    def skip(self, units: int) -> None:
        """Units that turned out not to be needed (a generation's candidates after the one kept): the total
        shrinks by them, so a finished phase ends full instead of looking cut short."""
        if self._bar is not None and units:
            self._bar.total -= units
            self._bar.refresh()

    def note(self, text: str) -> None:
        """Short status at the right of the bar (e.g. the last user's accuracy)."""
        if self._bar is not None:
            self._bar.set_postfix_str(text, refresh=False)


@contextmanager
def phase(description: str, total: int | None, unit: str, *, nested: bool = False,
          enabled: bool = True) -> Iterator[Phase]:
    """A progress bar with rate and ETA for one phase; invisible when stderr is not a terminal.

    ``nested`` bars (one candidate's users inside a generation's candidates) disappear when done, so
    the terminal keeps one line per finished outer phase. ``enabled=False`` hides the bar everywhere.
    """
    if not enabled or not sys.stderr.isatty():
        yield Phase(None)
        return
    with _bar_class()(total=total, desc=description, unit=unit, leave=not nested, file=sys.stderr,
                      dynamic_ncols=True) as bar:
        yield Phase(bar)
