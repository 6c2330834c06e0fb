"""SIGINT and SIGTERM stop ``memevo eval``, ``evolve`` and ``ablate`` with one line holding the exact command that
resumes the run (exit 130 / 143), and that command, run as printed, finishes the run; a failure a resume fixes
(an endpoint still refusing after its retries) prints the same command. Real subprocesses against the
fault-injecting test server (tests/doubles/fault_server.py, TEST DOUBLE), slowed so a signal lands mid-run."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from memevo.environments.amemgym.data.io import save_items
from tests.doubles.category_backend import CategoryBackend, category_world
from tests.doubles.fault_server import Fault, FaultServer

FIXTURE = Path(__file__).parents[1] / "fixtures" / "amemgym_small.json"
FIRST_USER = "b7e0d914-2c6f-4a83-9e1b-5d4c8a2f6e33"  # the longer chain of the two: it starts first

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "MEMEVO_CACHE_DIR": str(tmp_path / "cache"), "OPENAI_API_KEY": "test",
            "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "1"}


def _start(args: list[str], tmp_path: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "memevo.evolve.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_env(tmp_path), cwd=tmp_path)


def _wait_for(path: Path, process: subprocess.Popen[str], timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def _resume_line(stderr: str, signal_name: str) -> list[str]:
    """The printed resume command, as argv for this interpreter's ``memevo``."""
    lines = [line for line in stderr.splitlines() if line.startswith("memevo: ")]
    assert len(lines) == 1, stderr
    prefix = f"memevo: interrupted by {signal_name}; finished work is saved, resume with: memevo "
    assert lines[0].startswith(prefix), stderr
    return shlex.split(lines[0].removeprefix(prefix))


def _eval_args(tmp_path: Path, url: str) -> list[str]:
    (tmp_path / "agent.yaml").write_text(f"kind: native\nllm: {{model: gpt-4.1-mini, base_url: '{url}'}}\n")
    # in the order the command declares its options, as the resume command lists them
    return ["eval", "--agent", "agent.yaml", "--env", str(FIXTURE), "--out", "out", "--free-answers", "--max-concurrent-users", "1", "--seed", "3"]


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["SIGTERM", "SIGINT"])
def test_a_signalled_eval_prints_the_command_that_resumes_it(sig: int, code: int, tmp_path: Path) -> None:
    with FaultServer(latency_s=0.05) as server:
        args = _eval_args(tmp_path, server.url)
        process = _start(args, tmp_path)
        _wait_for(tmp_path / "out" / "run" / "users" / FIRST_USER / "period_00.json.gz", process)
        process.send_signal(sig)
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == code, stderr
        assert "Traceback" not in stderr and "Aborted" not in stderr, stderr
        resume = _resume_line(stderr, signal.Signals(sig).name)
        assert resume == [*args, "--resume"]  # every option given and nothing else
        finished = subprocess.run([sys.executable, "-m", "memevo.evolve.cli", *resume], capture_output=True,
                                  text=True, env=_env(tmp_path), cwd=tmp_path, timeout=300)
    assert finished.returncode == 0, finished.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert summary["n_items"] == 2


def _evolve_config(tmp_path: Path, url: str, **changes: object) -> Path:
    save_items(category_world(n_users=3, n_periods=2), tmp_path / "data.json")
    llm = {"model": "category-double", "base_url": url, "max_concurrency": 1, "max_retries": 0}
    config = {"name": "signals", "data": {"path": "data.json"}, "components": ["memory_types"],
              "seed": {"policy": {"kind": "awi", "update_every": 2, "short_term": 0, "llm": llm,
                                  "prompts": {"memory_types": "- commute (how the user gets to work)"}}},
              "split": {"train": 1, "val": 1, "test": 1}, "budget": {"generations": 1, "candidates": 1},
              "episode": {"rounds_init": 1, "rounds_update": 1}, "llm": {"proposer": llm},
              "tracking": {"enabled": False}, **changes}
    path = tmp_path / "evolve.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def test_a_terminated_evolution_prints_the_command_that_resumes_it(tmp_path: Path) -> None:
    backend = CategoryBackend(category_world(n_users=3, n_periods=2))
    with FaultServer(backend.http_reply, latency_s=0.02) as server:
        _evolve_config(tmp_path, server.url)
        args = ["evolve", "evolve.yaml", "--run-dir", "run", "--concurrency", "1"]
        process = _start(args, tmp_path)
        _wait_for(tmp_path / "run" / "split.json", process)
        while len(server.requests) < 3:
            time.sleep(0.02)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == 143, stderr
        resume = _resume_line(stderr, "SIGTERM")
        assert resume == [*args, "--resume"]
        finished = subprocess.run([sys.executable, "-m", "memevo.evolve.cli", *resume], capture_output=True,
                                  text=True, env=_env(tmp_path), cwd=tmp_path, timeout=600)
    assert finished.returncode == 0, finished.stderr
    assert (tmp_path / "run" / "result.json").exists()


def test_an_evolution_failing_on_the_endpoint_says_how_to_resume(tmp_path: Path) -> None:
    with FaultServer() as server:
        server.plan(*[Fault(status=429, message="slow down")] * 50)
        _evolve_config(tmp_path, server.url)
        failed = subprocess.run([sys.executable, "-m", "memevo.evolve.cli", "evolve", "evolve.yaml", "--run-dir",
                                 "run"], capture_output=True, text=True, env=_env(tmp_path), cwd=tmp_path, timeout=300)
    assert failed.returncode == 1, failed.stderr
    last = failed.stderr.strip().splitlines()[-1]
    assert last.startswith("memevo: run failed: ") and "HTTP 429: slow down" in last, failed.stderr
    assert last.endswith("; finished work is saved, resume with: memevo evolve evolve.yaml --run-dir run --resume")
