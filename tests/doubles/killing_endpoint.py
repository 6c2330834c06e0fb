"""TEST DOUBLE: the fault server (tests/doubles/fault_server.py) that ``kill -9``s its client at a trigger.

A trigger fires inside the server when a request arrives: at the N-th request of the process (a row trigger)
or at the first request after a file of the run folder exists (a file trigger). The server then kills the
client and waits for it to die before that request is answered, so the kill point is exact, not a sleep, and
the killed request is neither served nor counted. ``answered`` counts the requests it did answer (and ``unanswered``
the ones it killed the client over), so a test can compare a run's reported usage with what the endpoint served;
``served`` holds each answered request's digest, so a test can tell a request sent again from a new one.
"""

from __future__ import annotations

import hashlib
import json
import signal
import subprocess
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from tests.doubles.fault_server import FaultServer, Reply

SIGNALLED_EXIT_S = 60.0
"""How long a signalled client may take to exit before it is killed (its test then fails on the exit code)."""

Trigger = Callable[[int, Path], bool]
"""(1-based number of the request that just arrived, the run folder) -> kill now?"""


def at_request(number: int) -> Trigger:
    return lambda arrived, out: arrived == number


def after_file(relative: str) -> Trigger:
    return lambda arrived, out: (out / relative).exists()


def memory_agent_reply(body: dict[str, Any]) -> str:
    """Replies a memory agent can go on with: a choice for an answer prompt, a note for anything else."""
    text = body["messages"][-1]["content"]
    if '"answer"' in text or "answer" in json.dumps(body.get("response_format") or {}):
        return json.dumps({"answer": 1 + len(text) % 2})
    return f"Noted ({len(text.split())} words)."


def request_digest(body: dict[str, Any]) -> str:
    """What tells one request from another (the same body twice is the same request sent again)."""
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def sent_again(earlier: list[str], later: list[str]) -> int:
    """How many of the ``later`` requests had been served already among the ``earlier`` ones."""
    seen = set(earlier)
    return sum(digest in seen for digest in later)


class Signalling:
    """A trigger that sends ``signal_number`` (SIGTERM, SIGINT) instead of SIGKILL: the client stops as it would
    on a user's signal, and the request that fired it is never answered either."""

    def __init__(self, trigger: Trigger, signal_number: int) -> None:
        self.trigger = trigger
        self.signal = signal_number

    def __call__(self, arrived: int, out: Path) -> bool:
        return self.trigger(arrived, out)


class Killable(Protocol):
    """A client process (``subprocess.Popen``, or ``kill_points.ForkedMemevo``)."""

    def send_signal(self, sig: int) -> Any: ...

    def wait(self, timeout: float | None = None) -> Any: ...

    def kill(self) -> Any: ...


class KillingEndpoint:
    """The fault server answering with ``reply``, plus the kill triggers and the count of requests it answered."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.server = FaultServer(self._answer)
        self.answered = 0
        self.unanswered = 0
        self.served: list[str] = []
        self.process: Killable | None = None
        self.triggers: list[Trigger] = []
        self.out: Path | None = None
        self.arrived = 0
        self._lock = threading.Lock()

    def __enter__(self) -> KillingEndpoint:
        self.server.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.__exit__(*exc)

    @property
    def url(self) -> str:
        return self.server.url

    def _answer(self, body: dict[str, Any]) -> str:
        with self._lock:
            self.arrived += 1
            process, out = self.process, self.out
            if process is not None and out is not None and self.triggers and self.triggers[0](self.arrived, out):
                fired = self.triggers.pop(0)
                process.send_signal(fired.signal if isinstance(fired, Signalling) else signal.SIGKILL)
                try:  # dead before this request is answered: it is never counted, nor served
                    process.wait(timeout=SIGNALLED_EXIT_S)
                except subprocess.TimeoutExpired:  # a client deaf to the signal fails its test, not every later one
                    process.kill()
                    process.wait()
                self.unanswered += 1
                return "(to a dead client)"
            self.answered += 1
            self.served.append(request_digest(body))
        return self.reply(body)

    def watch(self, start: Callable[[], Killable], out: Path, triggers: Sequence[Trigger] = ()) -> Killable:
        """Start a client (whose run folder is ``out``) under ``triggers``; ``done`` ends the watch."""
        with self._lock:
            self.arrived, self.triggers, self.out = 0, list(triggers), out
            self.process = start()
            return self.process

    def done(self) -> None:
        with self._lock:
            self.process = None

    def run(self, command: Sequence[str], out: Path, *, env: dict[str, str], cwd: Path | None = None,
            triggers: Sequence[Trigger] = ()) -> subprocess.CompletedProcess[str]:
        """Run ``command`` as a subprocess to its end or its kill."""
        def start() -> subprocess.Popen[str]:
            return subprocess.Popen(list(command), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                    cwd=cwd)

        process = self.watch(start, out, triggers)
        assert isinstance(process, subprocess.Popen)
        stdout, stderr = process.communicate(timeout=300)
        self.done()
        return subprocess.CompletedProcess(list(command), process.returncode, stdout, stderr)
