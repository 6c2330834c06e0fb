"""Kill harness for ``memevo eval``: ``kill -9`` at request and file triggers, resume, compare with an
uninterrupted run.

The eval runs as a real subprocess against the fault-injecting test server, which kills it at a request
number or at the first request after a file exists (tests/doubles/killing_endpoint.py, TEST DOUBLE). The
endpoint serves one request at a time (``max_concurrency: 1``), so every answered request was counted by the
client before its next one.

After the last resume, the scores and the per-question rows must equal the uninterrupted run's, and the
reported usage must equal what the server answered (requests minus cache hits), however many kills, and the
request each kill cut off must be counted as unknown.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.doubles.killing_endpoint import (
    KillingEndpoint,
    Signalling,
    Trigger,
    after_file,
    at_request,
    memory_agent_reply,
)

FIXTURE = Path(__file__).parent / "fixtures" / "amemgym_small.json"
FIRST_USER = "b7e0d914-2c6f-4a83-9e1b-5d4c8a2f6e33"  # the longer chain of the two: it starts first


class EvalEndpoint(KillingEndpoint):
    """The killing endpoint answering like a memory agent, running ``memevo eval``."""

    def __init__(self) -> None:
        super().__init__(memory_agent_reply)

    def run_eval(
        self, out: Path, cache: Path, *extra: str, triggers: list[Trigger] = (), data: Path = FIXTURE,
        max_concurrency: int = 1,
    ) -> subprocess.CompletedProcess[str]:
        agent = out.parent / "agent.yaml"
        agent.write_text(
            f"kind: native\nllm: {{model: gpt-4.1-mini, base_url: '{self.url}', max_concurrency: {max_concurrency}}}\n"
        )
        env = {**os.environ, "MEMEVO_CACHE_DIR": str(cache), "OPENAI_API_KEY": "test"}
        command = [
            sys.executable,
            "-m",
            "memevo.evolve.cli",
            "eval",
            "--agent",
            str(agent),
            "--env",
            str(data),
            "--out",
            str(out),
            "--simulator",
            "template",
            "--max-concurrent-users",
            "1",
            *extra,
        ]
        return self.run(command, out, env=env, triggers=triggers)


def _results(out: Path) -> tuple[Any, Any, list[tuple[Any, ...]]]:
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    rows = [json.loads(line) for line in (out / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
    keys = ("user_id", "period", "question_index", "choice", "gold", "correct", "upper_bound")
    return summary["scores"], summary["user_scores"], [tuple(row[key] for key in keys) for row in rows]


def _usage_total(out: Path) -> dict[str, Any]:
    return json.loads((out / "summary.json").read_text(encoding="utf-8"))["usage"]["total"]


def _served_calls(out: Path) -> int:
    total = _usage_total(out)
    return total["calls"] - total["cache_hits"]


@pytest.fixture(scope="module")
def endpoint():  # type: ignore[no-untyped-def]
    with EvalEndpoint() as killing:
        yield killing


@pytest.fixture(scope="module")
def reference(endpoint: EvalEndpoint, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """The uninterrupted run, and how many requests the endpoint answered for it."""
    out = tmp_path_factory.mktemp("reference") / "out"
    before = endpoint.answered
    finished = endpoint.run_eval(out, out.parent / "cache", "--upper-bound")
    assert finished.returncode == 0, finished.stderr
    assert f"results: {out}" in finished.stdout  # the headline reaches a pipe though the finished eval skips teardown
    return out, endpoint.answered - before


KILL_PLANS: dict[str, list[list[Trigger]]] = {
    # each inner list is one process: it is killed at its triggers in turn (none: it must finish)
    "during the upper bound": [[at_request(3)], []],
    "right after the upper bound is saved": [[after_file("upper_bound.json")], []],
    "mid-period of the first user": [[after_file(f"run/users/{FIRST_USER}/period_00.json.gz")], []],
    "at a request row, twice in a row": [[at_request(20)], [at_request(7)], []],
    "after the first user, then mid-way again": [
        [after_file(f"run/users/{FIRST_USER}/period_02.json.gz")],
        [at_request(5)],
        [],
    ],
}


@pytest.mark.parametrize("plan", list(KILL_PLANS), ids=list(KILL_PLANS))
def test_killed_eval_resumes_to_the_same_results_and_counts_what_was_served(
    plan: str, endpoint: EvalEndpoint, reference: tuple[Path, int], tmp_path: Path
) -> None:
    reference_out, reference_served = reference
    out, cache = tmp_path / "out", tmp_path / "cache"
    before = endpoint.answered
    for number, triggers in enumerate(KILL_PLANS[plan]):
        resume = ("--resume",) if number else ()
        finished = endpoint.run_eval(out, cache, "--upper-bound", *resume, triggers=triggers)
        if triggers:
            assert finished.returncode == -signal.SIGKILL, (plan, number, finished.stderr)
            assert not triggers or endpoint.triggers == [], "a trigger never fired"
        else:
            assert finished.returncode == 0, finished.stderr
    assert _results(out) == _results(reference_out)
    served = endpoint.answered - before
    assert _served_calls(out) == served
    assert served >= reference_served == _served_calls(reference_out)
    kills = len(KILL_PLANS[plan]) - 1  # each killed over a request it had booked: counted unknown, not lost
    assert _usage_total(out)["unknown_calls"] == kills and _usage_total(reference_out)["unknown_calls"] == 0


def test_resume_with_changed_data_exits_2_naming_the_user(endpoint: EvalEndpoint, tmp_path: Path) -> None:
    out, cache = tmp_path / "out", tmp_path / "cache"
    killed = endpoint.run_eval(out, cache, triggers=[at_request(4)])
    assert killed.returncode == -signal.SIGKILL
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    data[0]["qas"][0]["answer_choices"][0]["answer"] += " (edited)"
    changed = tmp_path / "data.json"
    changed.write_text(json.dumps(data), encoding="utf-8")
    requests_before = len(endpoint.server.requests)
    resumed = endpoint.run_eval(out, cache, "--resume", data=changed)
    assert resumed.returncode == 2, resumed.stderr
    assert f"inputs changed since this run started (data.{data[0]['id']})" in resumed.stderr
    assert len(endpoint.server.requests) == requests_before


def test_resume_may_change_the_width_and_gives_the_same_results(
    endpoint: EvalEndpoint, reference: tuple[Path, int], tmp_path: Path
) -> None:
    out, cache = tmp_path / "out", tmp_path / "cache"
    killed = endpoint.run_eval(out, cache, "--upper-bound", triggers=[at_request(4)])
    assert killed.returncode == -signal.SIGKILL
    resumed = endpoint.run_eval(out, cache, "--upper-bound", "--resume", "--concurrency", "2", max_concurrency=3)
    assert resumed.returncode == 0, resumed.stderr
    assert _results(out) == _results(reference[0])


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["SIGTERM", "SIGINT"])
def test_a_signalled_eval_says_how_to_resume_and_resumes_to_the_same_results(
    sig: int, code: int, endpoint: EvalEndpoint, reference: tuple[Path, int], tmp_path: Path
) -> None:
    out, cache = tmp_path / "out", tmp_path / "cache"
    before = endpoint.answered
    stopped = endpoint.run_eval(out, cache, "--upper-bound",
                                triggers=[Signalling(after_file(f"run/users/{FIRST_USER}/period_01.json.gz"), sig)])
    assert stopped.returncode == code and endpoint.triggers == [], stopped.stderr
    assert stopped.stderr.strip().splitlines()[-1] == (
        f"memevo: interrupted by {signal.Signals(sig).name}; finished work is saved, resume with: memevo eval "
        f"--agent {out.parent / 'agent.yaml'} --env {FIXTURE} --out {out} --upper-bound --simulator template "
        "--max-concurrent-users 1 --resume")
    resumed = endpoint.run_eval(out, cache, "--upper-bound", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert _results(out) == _results(reference[0])
    assert _served_calls(out) == endpoint.answered - before
