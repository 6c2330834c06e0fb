"""``memevo ui``: the tracker's UI on a run's store, announced only once it answers.

The server takes tens of seconds to import and start on a busy machine; an address printed before it listens
sends a person to an error page. So the server runs as a child in its own process group: memevo polls its health
route, prints the address when it answers (or one line when the server died first), waits for it and stops the
whole group on Ctrl-C or SIGTERM. What the server is, its pages and what to say before starting it come from the
tracker's ``TrackerUI`` (``memevo.evolve.observers.tracker_ui``), which ``memevo ui`` hands in.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING

from memevo.core.errors import RunFailedError
from memevo.evolve.process_group import signal_group, stop_group

if TYPE_CHECKING:
    from memevo.evolve.observers.tracker_ui import TrackerUI

POLL_S = 0.25


def server_command(ui: TrackerUI, uri: str, *, port: int, workers: int) -> list[str]:
    """The tracker's command that serves its UI on ``uri`` (tests start a double in its place)."""
    return ui.server_command(uri, port=port, workers=workers)


def serving(server: subprocess.Popen[bytes], url: str) -> bool:
    """Wait until the server answers at ``url`` (True) or exits (False)."""
    while server.poll() is None:
        try:
            with urllib.request.urlopen(url, timeout=2) as reply:
                if reply.status == 200:
                    return True
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(POLL_S)
    return False


def serve(ui: TrackerUI, uri: str, experiment: str | None, *, port: int, workers: int,
          echo: Callable[[str], None]) -> int:
    """Run the tracker's UI on ``uri`` until it stops or is stopped; its exit code (0 after Ctrl-C or SIGTERM)."""
    for note in ui.notes(uri):
        echo(note)
    addresses = [(label, f"http://127.0.0.1:{port}/{page}") for label, page in ui.pages(uri, experiment)]
    server = subprocess.Popen(server_command(ui, uri, port=port, workers=workers), env=os.environ | dict(ui.environment),
                              start_new_session=True)
    stopped = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopped
        stopped = True
        signal_group(server, signal.SIGTERM)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        echo(f"starting the {ui.name} UI on port {port} (store {uri}) ...")
        if not serving(server, f"http://127.0.0.1:{port}{ui.health_path}"):
            if stopped:
                return 0
            raise RunFailedError(f"the {ui.name} server exited with code {server.returncode} before it served "
                                 "(its messages are above)")
        echo(f"{ui.name} UI: {addresses[0][1]}  (Ctrl-C to stop)")
        for label, address in addresses[1:]:
            echo(f"  {label}: {address}")
        code = server.wait()
        return 0 if stopped else code
    except KeyboardInterrupt:
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous)
        stop_group(server, grace_s=10)

