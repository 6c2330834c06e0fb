"""The per-period plot of ``memevo eval``, drawn by a child process that starts with the run.

Importing matplotlib costs about half a second of CPU and drawing the figure a few tenths more. Started at
launch, the child imports matplotlib on another core while the episodes wait on the endpoint (a thread
would take the GIL from the run's event loop). Told the likely layout at the start (``prepare``), it also
builds the figure meanwhile, so after the last reply only the values are set and savefig writes the PNG, while
the parent writes its other outputs. The child reads one JSON request per line on stdin: an optional ``prepare``, then the ``draw``; when
the parent ends without sending the draw (an error, a kill), stdin closes and the child exits without drawing
anything.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from types import TracebackType
from typing import Any

from memevo.agents.errors import RunFailedError
from memevo.environments.metrics import Scores

OUTPUT_TAIL_CHARS = 2000
CHILD_NICENESS = 10
"""Below the run's priority: on an idle machine the child has a core of its own, on a busy one it must not slow the
run's start. Measured under load 3.4 with the child niced from its own code: wall 5.00 -> 4.75 s native, 7.07 -> 6.76 s
AWI. Niced from its spawn instead, under one busy loop: first request ~40 ms sooner, tail ~30 ms longer, wall the
same; on an idle machine no difference."""


class PlotProcess:
    """A child ready to draw one per-period plot: ``draw`` hands it the scores, ``wait`` returns the plot's
    path once it is written (or raises ``RunFailedError`` with the child's error)."""

    def __init__(self) -> None:
        # one pipe for stdout and stderr: the child prints the path, or its traceback
        self._child = subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        # From its first instruction: its interpreter start and imports (~0.15 s of CPU) fall in the run's start.
        with contextlib.suppress(ProcessLookupError):  # it already ended: ``wait`` reports why
            os.setpriority(os.PRIO_PROCESS, self._child.pid, os.getpriority(os.PRIO_PROCESS, 0) + CHILD_NICENESS)
        self._asked = False

    @property
    def exit_code(self) -> int | None:
        """The child's exit code once it has ended, else None."""
        return self._child.returncode

    def prepare(self, periods: int, upper_bound: bool, title: str) -> None:
        """Let the child build the figure it will likely draw: ``periods`` periods, with or without the upper
        bound (a guess: scores that turn out to need another layout get a figure of their own)."""
        self._send({"prepare": {"periods": periods, "upper_bound": upper_bound, "title": title}})

    def draw(self, scores: Scores, folder: Path, title: str) -> None:
        """Send the request; the child draws while the caller goes on."""
        self._asked = True
        self._send({"draw": {"scores": scores.model_dump(mode="json"), "folder": str(folder), "title": title}},
                   last=True)

    def wait(self) -> Path:
        """The plot's path once the child has written it."""
        if not self._asked:
            raise RuntimeError("wait() before draw()")
        output = self._finish().decode(errors="replace")
        if self._child.returncode != 0:
            raise RunFailedError(f"the per-period plot could not be drawn (plot process exit code "
                                 f"{self._child.returncode}):\n{output[-OUTPUT_TAIL_CHARS:]}")
        return Path(output.splitlines()[-1])

    def _send(self, request: dict[str, Any] | None, *, last: bool = False) -> None:
        """One request line (none: only the end of input), flushed; ``last`` closes the child's input."""
        assert self._child.stdin is not None
        try:
            if request is not None:
                self._child.stdin.write(json.dumps(request).encode() + b"\n")
                self._child.stdin.flush()
            if last:
                self._child.stdin.close()
        except BrokenPipeError:
            pass  # the child already ended; wait() reports why

    def _finish(self) -> bytes:
        assert self._child.stdout is not None
        output = self._child.stdout.read()
        self._child.wait()
        return output

    def __enter__(self) -> PlotProcess:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self._child.returncode is not None:
            return
        if kind is not None:  # the run is failing or interrupted: do not wait on the child
            self._child.kill()
        elif not self._asked:
            self._send(None, last=True)  # no draw request: the child exits without drawing
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
