"""Stopping a server started in a process group of its own, with everything it started.

``mlflow server`` and ``mlflow ui`` start web workers of their own; a signal to the one process memevo started
leaves those behind, holding the port. So such servers start in a new session, and stop as a group.
"""

from __future__ import annotations

import os
import signal
import subprocess


def signal_group(process: subprocess.Popen[bytes], signal_number: int) -> None:
    """Send ``signal_number`` to the process's group (nothing when the group is gone already)."""
    try:
        os.killpg(process.pid, signal_number)
    except ProcessLookupError:
        pass


def stop_group(process: subprocess.Popen[bytes], *, grace_s: float) -> None:
    """SIGTERM to the group, SIGKILL when the process has not exited after ``grace_s`` seconds."""
    if process.poll() is not None:
        return
    signal_group(process, signal.SIGTERM)
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        signal_group(process, signal.SIGKILL)
        process.wait()
