"""Start-up work a run needs later but not for its first request (Optuna's study, MLflow's store, DSPy).

Such work waits until the run's first request is in flight (or its first answer came from the cache), then runs in
one thread, one piece after another, while the run waits on its endpoint: started earlier it would share the
interpreter with the run's own start and delay the first request. Nothing is skipped: a piece asked for before
its turn runs at once in the asking thread, so a run that makes no request (a resumed finished one) still gets it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Generic, TypeVar

from memevo.agents.llm.accounting import Accounting, Counts

T = TypeVar("T")


class Deferred(Generic[T]):
    """One piece of deferred work: run by the start-up thread, or by the first caller of ``result``."""

    def __init__(self, work: Callable[[], T]) -> None:
        self._work: Callable[[], T] | None = work
        self._lock = threading.Lock()
        self._future: Future[T] = Future()

    def run(self) -> None:
        """Run the work here unless another thread has taken it."""
        with self._lock:
            work, self._work = self._work, None
        if work is None:
            return
        try:
            self._future.set_result(work())
        except BaseException as error:  # raised again to whoever asks for the result
            self._future.set_exception(error)

    def result(self) -> T:
        """The work's value (or what it raised), waiting for it if another thread runs it."""
        self.run()
        return self._future.result()


class DeferredStart(Accounting):
    """Attached to the hub's accounting (``watch``): its first count, a request booked as sent or an answer from the
    cache, starts the thread that runs the deferred work in the order it was deferred."""

    def __init__(self, thread_name: str = "memevo-deferred-start") -> None:
        super().__init__()
        self.thread_name = thread_name
        self._pieces: list[Deferred[object]] = []
        self._started = False
        self._start_lock = threading.Lock()
        self._watched: Accounting | None = None
        self._thread: threading.Thread | None = None

    def defer(self, work: Callable[[], T], *, first: bool = False) -> Deferred[T]:
        """``work`` to run in the start-up thread; ``first``: before the pieces deferred so far (it is needed sooner)."""
        piece = Deferred(work)
        self._pieces.insert(0 if first else len(self._pieces), piece)  # type: ignore[arg-type]  # only run here
        return piece

    def watch(self, accounting: Accounting) -> None:
        """Start once ``accounting`` counts its first request or answer."""
        self._watched = accounting
        accounting.attach(self)

    def stop_watching(self) -> None:
        """No longer start on a count (the run is over: a hub shared with the next run counts its requests)."""
        watched, self._watched = self._watched, None
        if watched is not None:
            watched.detach(self)

    def start(self) -> None:
        """Start the thread now (at most once)."""
        with self._start_lock:
            if self._started:
                return
            self._started = True
        self.stop_watching()
        self._thread = threading.Thread(target=self._run_all, name=self.thread_name)
        self._thread.start()

    def join(self) -> None:
        """Wait for the thread's piece in hand (an interrupted run's Optuna study half made would meet the resume
        that a Python caller starts in the same process)."""
        if self._thread is not None:
            self._thread.join()

    def _run_all(self) -> None:
        for piece in self._pieces:
            piece.run()

    def _add(self, role: str, counts: Counts) -> None:
        self.start()
