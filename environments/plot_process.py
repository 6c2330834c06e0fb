"""The per-period plot of ``memevo eval``, drawn by a child process that starts with the run.

Importing matplotlib costs about half a second of CPU and drawing the figure a few tenths more. Started at
launch, the child imports matplotlib on another core while the episodes wait on the endpoint (a thread
would take the GIL from the run's event loop). Told the likely layout at the start (``prepare``), it also
builds the figure meanwhile, so after the last reply only the values are set and savefig writes the PNG, while
the parent writes its other outputs. The child reads one JSON request per line on stdin: an optional ``prepare``, then the ``draw``; when
the parent ends without sending the draw (an error, a kill), stdin closes and the child exits without drawing
anything. A figure already drawn from the same scores and title (its key beside it, ``key_path``) is not drawn
again, and a rerun in a folder that has a figure starts no child until it is needed: rerunning finished work does
not wait on matplotlib.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from types import TracebackType
from typing import Any

from memevo.core.atomic_files import write_json_atomic
from memevo.core.errors import RunFailedError
from memevo.environments.metrics import Scores

OUTPUT_TAIL_CHARS = 2000
PLOT_FILE = "periods.png"
"""``plots.PERIODS_PLOT`` (not imported: that module imports matplotlib, which only the child does)."""
CHILD_NICENESS = 10
"""Below the run's priority: on an idle machine the child has a core of its own, on a busy one it must not slow the
run's start. Measured under load 3.4 with the child niced from its own code: wall 5.00 -> 4.75 s native, 7.07 -> 6.76 s
AWI. Niced from its spawn instead, under one busy loop: first request ~40 ms sooner, tail ~30 ms longer, wall the
same; on an idle machine no difference."""


def drawn_key(request: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()


def key_path(figure: Path) -> Path:
    """Where the key of ``figure``'s request is kept: beside it, hidden."""
    return figure.with_name(f".{figure.name}.key")


def already_drawn(figure: Path, request: dict[str, Any]) -> bool:
    """``figure`` exists and was drawn from ``request`` (``mark_drawn``)."""
    keyed = key_path(figure)
    if not figure.exists() or not keyed.exists():
        return False
    with contextlib.suppress(ValueError):
        return bool(json.loads(keyed.read_text(encoding="utf-8")).get("key") == drawn_key(request))
    return False


def mark_drawn(figure: Path, request: dict[str, Any]) -> None:
    write_json_atomic(key_path(figure), {"key": drawn_key(request)})


class PlotProcess:
    """A child ready to draw one per-period plot: ``draw`` hands it the scores, ``wait`` returns the plot's
    path once it is written (or raises ``RunFailedError`` with the child's error). With ``start`` off the child is
    only started by a ``draw`` that finds no figure of the same request (a rerun's plot is usually drawn already)."""

    def __init__(self, *, start: bool = True) -> None:
        self._child: subprocess.Popen[bytes] | None = None
        self._pending: list[dict[str, Any]] = []
        self._drawn: Path | None = None
        self._identity: tuple[Path, dict[str, Any]] | None = None
        self._asked = False
        if start:
            self._start()

    def _start(self) -> None:
        # one pipe for stdout and stderr: the child prints the path, or its traceback
        self._child = subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        # From its first instruction: its interpreter start and imports (~0.15 s of CPU) fall in the run's start.
        with contextlib.suppress(ProcessLookupError):  # it already ended: ``wait`` reports why
            os.setpriority(os.PRIO_PROCESS, self._child.pid, os.getpriority(os.PRIO_PROCESS, 0) + CHILD_NICENESS)

    @property
    def exit_code(self) -> int | None:
        """The child's exit code once it has ended, else None (also when none was started)."""
        return None if self._child is None else self._child.returncode

    def prepare(self, periods: int, upper_bound: bool, title: str) -> None:
        """Let the child build the figure it will likely draw: ``periods`` periods, with or without the upper
        bound (a guess: scores that turn out to need another layout get a figure of their own)."""
        request = {"prepare": {"periods": periods, "upper_bound": upper_bound, "title": title}}
        if self._child is None:
            self._pending.append(request)
        else:
            self._send(request)

    def draw(self, scores: Scores, folder: Path, title: str) -> None:
        """Send the request; the child draws while the caller goes on. Nothing to draw when the folder's figure
        was drawn from the same request."""
        self._asked = True
        request = {"draw": {"scores": scores.model_dump(mode="json"), "folder": str(folder), "title": title}}
        identity = {**request["draw"], "folder": None}  # a moved folder keeps its figure
        if already_drawn(folder / PLOT_FILE, identity):
            self._drawn = folder / PLOT_FILE
            return
        self._identity = (folder / PLOT_FILE, identity)
        if self._child is None:
            self._start()
            for pending in self._pending:
                self._send(pending)
        self._send(request, last=True)

    def wait(self) -> Path:
        """The plot's path once the child has written it (at once when it was drawn already)."""
        if not self._asked:
            raise RuntimeError("wait() before draw()")
        if self._drawn is not None:
            return self._drawn
        assert self._child is not None
        output = self._finish().decode(errors="replace")
        if self._child.returncode != 0:
            raise RunFailedError(f"the per-period plot could not be drawn (plot process exit code "
                                 f"{self._child.returncode}):\n{output[-OUTPUT_TAIL_CHARS:]}")
        self._drawn = Path(output.splitlines()[-1])
        if self._identity is not None:
            mark_drawn(*self._identity)
        return self._drawn

    def _send(self, request: dict[str, Any] | None, *, last: bool = False) -> None:
        """One request line (none: only the end of input), flushed; ``last`` closes the child's input."""
        assert self._child is not None and self._child.stdin is not None
        try:
            if request is not None:
                self._child.stdin.write(json.dumps(request).encode() + b"\n")
                self._child.stdin.flush()
            if last:
                self._child.stdin.close()
        except BrokenPipeError:
            pass  # the child already ended; wait() reports why

    def _finish(self) -> bytes:
        assert self._child is not None and self._child.stdout is not None
        output = self._child.stdout.read()
        self._child.wait()
        return output

    def __enter__(self) -> PlotProcess:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self._child is None or self._child.returncode is not None:
            return
        if kind is not None or not self._asked or self._drawn is not None:
            # failing, interrupted, or nothing to draw: the child has nothing to write, so it is not waited for
            # (it may still be importing matplotlib)
            self._child.kill()
        self._finish()


def main() -> None:
    """The child: import the plotting stack at once, build the figure it is told to prepare, then draw the one
    draw request, if any."""
    from memevo.environments.plots import PeriodsFigure, PeriodsLayout  # what this process exists to import

    Scores.model_rebuild()  # its validator, built on first use, is built now, while the run goes on
    prepared: PeriodsFigure | None = None
    for line in sys.stdin.buffer:
        request = json.loads(line)
        if "prepare" in request:
            expected = request["prepare"]
            prepared = PeriodsFigure(PeriodsLayout.expected(expected["periods"], expected["upper_bound"],
                                                            expected["title"]))
            continue
        draw = request["draw"]
        scores = Scores.model_validate(draw["scores"])
        layout = PeriodsLayout.of(scores, draw["title"])
        figure = prepared if prepared is not None and prepared.layout == layout else PeriodsFigure(layout)
        print(figure.save(scores, Path(draw["folder"])), flush=True)
        os._exit(0)  # the file is written and closed: skip tearing matplotlib down (~0.2 s the parent would wait)


if __name__ == "__main__":
    main()
