"""``memevo ui``: MLflow's UI on a run's store, announced only once it answers.

The server takes tens of seconds to import and start on a busy machine; an address printed before it listens
sends a person to an error page. So the server runs as a child in its own process group: memevo polls its
``/health`` route, prints the address when it answers (or one line when the server died first), waits for it
and stops the whole group on Ctrl-C or SIGTERM. Before that, a run folder moved or copied with its store is
pointed at its own artifacts, and artifacts that cannot be found are named.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from types import FrameType

from mlflow import MlflowClient

from memevo.core.errors import RunFailedError
from memevo.evolve.process_group import signal_group, stop_group
from memevo.evolve.tracking.payloads import RUNS_VIEWS, VIEW_TAG_PREFIX
from memevo.evolve.tracking.stores import missing_artifacts, relocate_artifacts, sqlite_file

UI_ENVIRONMENT = {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
"""The job runner serves MLflow's GenAI jobs (judges, trace rollups); a run store needs none of them."""
POLL_S = 0.25


def pages(uri: str, experiment: str | None) -> list[tuple[str, str]]:
    """The UI pages of the run's experiment: its runs in the "Model training" view (MLflow's default GenAI view
    opens on traces, which an evolution does not write), in each of memevo's views the experiment has (nested
    runs, then every candidate), and its prompts; each with what it shows. Only a local SQLite store that exists is
    looked into: opening a missing one would create it."""
    view = "?workflowType=machine_learning"
    database = sqlite_file(uri)
    if experiment is None or database is None or not database.is_file():
        return [("experiments", f"#/experiments{view}")]
    found = MlflowClient(tracking_uri=uri).get_experiment_by_name(experiment)
    if found is None:
        return [("experiments", f"#/experiments{view}")]
    runs = f"#/experiments/{found.experiment_id}/runs{view}"
    shared = [(RUNS_VIEWS[key], f"{runs}&viewStateShareKey={key}") for key in RUNS_VIEWS
              if f"{VIEW_TAG_PREFIX}{key}" in found.tags]
    return (shared or [("runs", runs)]) + prompt_pages(MlflowClient(tracking_uri=uri), experiment)


def prompt_pages(client: MlflowClient, experiment: str) -> list[tuple[str, str]]:
    """The registered prompts of the run, each opened on its first version (the seed's): MLflow's *Compare* then
    sets it against the newest (the best), old on the left and new on the right, so an added line reads as added.
    Opened on the newest, as by default, Compare sets it against the one before, and every change reads backwards."""
    prompts = client.search_prompts(filter_string=f"name LIKE '{experiment}-%'")
    return [(f"prompt {prompt.name} (press Compare: seed -> best)", f"#/prompts/{prompt.name}?promptVersion=1")
            for prompt in prompts]


def artifact_notes(uri: str) -> list[str]:
    """What a person should know about the store's artifacts before looking: where a moved run folder's artifacts
    are now read from, and which experiments' artifact folders are missing."""
    database = sqlite_file(uri)
    if database is None:
        return []
    notes = []
    moved = relocate_artifacts(database)
    if moved:
        notes.append(f"the run folder was moved or copied: its store now reads the artifacts beside it ({moved})")
    notes += [f"artifacts missing for {what} does not exist, so its runs show none; restore that folder"
              for what in missing_artifacts(database)]
    return notes


def server_command(uri: str, *, port: int, workers: int) -> list[str]:
    return [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", uri, "--host", "127.0.0.1", "--port",
            str(port), "--workers", str(workers)]


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


def serve(uri: str, experiment: str | None, *, port: int, workers: int, echo: Callable[[str], None]) -> int:
    """Run MLflow's UI on ``uri`` until it stops or is stopped; its exit code (0 after Ctrl-C or SIGTERM)."""
    for note in artifact_notes(uri):
        echo(note)
    addresses = [(label, f"http://127.0.0.1:{port}/{page}") for label, page in pages(uri, experiment)]
    server = subprocess.Popen(server_command(uri, port=port, workers=workers), env=os.environ | UI_ENVIRONMENT,
                              start_new_session=True)
    stopped = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopped
        stopped = True
        signal_group(server, signal.SIGTERM)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        echo(f"starting the MLflow UI on port {port} (store {uri}) ...")
        if not serving(server, f"http://127.0.0.1:{port}/health"):
            if stopped:
                return 0
            raise RunFailedError(f"the MLflow server exited with code {server.returncode} before it served "
                                 "(its messages are above)")
        echo(f"MLflow UI: {addresses[0][1]}  (Ctrl-C to stop)")
        for label, address in addresses[1:]:
            echo(f"  {label}: {address}")
        code = server.wait()
        return 0 if stopped else code
    except KeyboardInterrupt:
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous)
        stop_group(server, grace_s=10)

