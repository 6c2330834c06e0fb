"""A run's event loop in a worker thread, cancelled from the thread that waits for it.

A notebook runs its cells inside an event loop, so the Python API plays its runs on a loop of their own in a worker
thread. SIGINT (a notebook's stop button) reaches the waiting thread only; the waiting thread then throws the
``StopSwitch`` that the worker's run registered, which cancels the run's main task, so its clean-ups run and its
finished work stays saved for a resume. The code that starts the loop (``run_resumable``) does not know it runs in a
worker: it asks ``run_switched`` to run the coroutine, which uses the switch in effect, if any.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from contextlib import suppress
from contextvars import ContextVar
from typing import Any, TypeVar

T = TypeVar("T")


class StopSwitch:
    """The run a worker thread plays (``serve``), and ``stop``, which another thread calls to cancel it."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None
        self._stopped = threading.Event()
        self._lock = threading.Lock()

    def serve(self, work: Callable[[], T]) -> T:
        """``work`` with this switch in effect: a loop it starts through ``run_switched`` can be stopped."""
        token = _IN_EFFECT.set(self)
        try:
            return work()
        finally:
            _IN_EFFECT.reset(token)

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """``asyncio.run(coroutine)``, its main task cancelled by ``stop``; stopped before, it raises
        ``asyncio.CancelledError`` without running."""

        async def main() -> T:
            with self._lock:
                self._loop, self._task = asyncio.get_running_loop(), asyncio.current_task()
            try:
                if self._stopped.is_set():
                    raise asyncio.CancelledError
                return await coroutine
            finally:
                with self._lock:
                    self._loop = self._task = None

        try:
            return asyncio.run(main())
        finally:
            coroutine.close()  # never awaited when stopped before it began

    def stop(self) -> None:
        """Cancel the run in progress, and any run started after this."""
        self._stopped.set()
        with self._lock:
            loop, task = self._loop, self._task
            if loop is not None and task is not None:
                with suppress(RuntimeError):  # the loop already closed: the work is over
                    loop.call_soon_threadsafe(task.cancel)


_IN_EFFECT: ContextVar[StopSwitch | None] = ContextVar("memevo_stop_switch", default=None)


def run_switched(coroutine: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coroutine)``, stoppable by the switch of the ``StopSwitch.serve`` it runs under, if any."""
    switch = _IN_EFFECT.get()
    return asyncio.run(coroutine) if switch is None else switch.run(coroutine)
