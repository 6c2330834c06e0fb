"""Run the async gateway from synchronous code (DSPy modules call their LM synchronously).

A sync caller may be a plain script, a worker thread of a running event loop (``asyncio.to_thread``,
DSPy's parallel executor) or even that loop's own thread, where ``asyncio.run`` is not allowed. One
daemon thread owns a private event loop for the whole process; sync callers submit coroutines to it
and block on the result; async callers on any loop send their HTTP requests through it as well (see
``transport``), so one connection pool serves the whole process and is closed once. Because the gateway's concurrency limit is shared across loops, calls made
this way still count against the same limit as calls made on the caller's loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


def bridge_loop() -> asyncio.AbstractEventLoop:
    """The process's bridge loop, started on first use (the gateway's HTTP sessions live on it too)."""
    global _loop, _thread
    with _lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            _thread = threading.Thread(target=_loop.run_forever, name="memevo-llm-sync-bridge", daemon=True)
            _thread.start()
        return _loop


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Block until ``coroutine`` has run on the bridge loop and return its result."""
    loop = bridge_loop()
    if threading.current_thread() is _thread:
        coroutine.close()
        raise RuntimeError("run_sync was called from the bridge loop itself; await the coroutine instead")
    return asyncio.run_coroutine_threadsafe(coroutine, loop).result()
