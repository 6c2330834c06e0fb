"""A new local MLflow store opened by several processes at once is created once: every process opens it, none
dies on "table already exists" (``evolve/tracking/stores.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

OPENER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from memevo.evolve.tracking.stores import open_tracking_store
    go = Path(sys.argv[2])
    while not go.exists():
        time.sleep(0.001)
    client = open_tracking_store(sys.argv[1])
    client.get_experiment_by_name("shared") or client.search_experiments()
    print("opened", flush=True)
""")


def test_processes_creating_one_new_store_at_once_all_open_it(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'shared' / 'mlflow.db'}"
    (tmp_path / "shared").mkdir()
    go = tmp_path / "go"
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "1"}
    openers = [subprocess.Popen([sys.executable, "-c", OPENER, uri, str(go)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env) for _ in range(3)]
    time.sleep(3.0)  # every opener has imported MLflow and waits for the go
    go.touch()
    results = [opener.communicate(timeout=120) for opener in openers]
    for opener, (out, err) in zip(openers, results, strict=True):
        assert opener.returncode == 0 and out.strip() == "opened", err[-2000:]
    assert sorted(path.name for path in (tmp_path / "shared").iterdir()) == ["mlflow.db"]  # no lock file left
