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
import re
import signal
import subprocess
import sys
from collections.abc import Callable
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

FIXTURE = Path(__file__).parents[1] / "fixtures" / "amemgym_small.json"
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


def _counts_what_was_served(out: Path, answered: int) -> bool:
    """Usage counts every answer that reached memevo; a request in flight when a run stopped (a signal, a full
    disk, a kill) is booked as unknown, or as cancelled when the ending run cancelled its task, since the endpoint may
    have answered it to a process already ending."""
    counted, total = _served_calls(out), _usage_total(out)
    return counted <= answered <= counted + total["unknown_calls"] + total.get("cancelled_calls", 0)


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
        f"--agent {out.parent / 'agent.yaml'} --env {FIXTURE} --out {out} --upper-bound "
        "--max-concurrent-users 1 --resume")
    resumed = endpoint.run_eval(out, cache, "--upper-bound", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert _results(out) == _results(reference[0])
    assert _counts_what_was_served(out, endpoint.answered - before)


def _truncate(pattern: str) -> Callable[[Path], Path]:
    """Cut the last run file matching ``pattern`` (by name: the newest period) to half its size, as a failed copy
    or another tool's write leaves it. A kill may come before the previous period's state is dropped, so a state
    pattern can match two files: the newest is the one a resume reads."""

    def damage(out: Path) -> Path:
        path = sorted(out.glob(pattern))[-1]
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
        return path

    return damage


def _garbage(relative: str) -> Callable[[Path], Path]:
    def damage(out: Path) -> Path:
        (out / relative).write_bytes(b"\x00garbage\xff")
        return out / relative

    return damage


REPAIRED: dict[str, tuple[list[Trigger], Callable[[Path], Path], str]] = {
    # (kills before the damage (none: a finished run), the damage, what the warning line says after the file)
    "a period record cut short mid-run": ([after_file(f"run/users/{FIRST_USER}/period_01.json.gz")],
                                          _truncate(f"run/users/{FIRST_USER}/period_00.json.gz"), "period_00.json.gz is "
                                          "damaged"),
    "the last state cut short mid-run": ([after_file(f"run/users/{FIRST_USER}/period_01.json.gz")],
                                         _truncate("run/users/*/period_*.state.json.gz"), "state.json.gz is damaged"),
    "a user's meta.json overwritten": ([], _garbage(f"run/users/{FIRST_USER}/meta.json"), "meta.json is damaged"),
    "the upper-bound table cut short": ([], _truncate("upper_bound.json"), "damaged: invalid JSON"),
    "run_kind.json overwritten": ([], _garbage("run_kind.json"), "written again as 'eval'"),
}
"""Damaged files a resume recomputes: it sets them aside, says so in one warning line, and ends as the uninterrupted
run did, without a request the cache could answer."""


@pytest.mark.parametrize("case", list(REPAIRED), ids=list(REPAIRED))
def test_a_damaged_file_that_resume_recomputes_is_set_aside_and_recomputed(
    case: str, endpoint: EvalEndpoint, reference: tuple[Path, int], tmp_path: Path
) -> None:
    kills, damage, warning = REPAIRED[case]
    out, cache = tmp_path / "out", tmp_path / "cache"
    before = endpoint.answered
    first = endpoint.run_eval(out, cache, "--upper-bound", triggers=kills)
    assert first.returncode == (-signal.SIGKILL if kills else 0), first.stderr
    damaged = damage(out)
    resumed = endpoint.run_eval(out, cache, "--upper-bound", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    lines = [line for line in resumed.stderr.splitlines() if damaged.name in line]
    assert len(lines) == 1 and str(damaged.parent) in lines[0] and warning in lines[0], resumed.stderr
    assert _results(out) == _results(reference[0])
    assert _counts_what_was_served(out, endpoint.answered - before)


def test_a_damaged_record_of_inputs_exits_2_naming_it_and_what_to_do(endpoint: EvalEndpoint, tmp_path: Path) -> None:
    out, cache = tmp_path / "out", tmp_path / "cache"
    assert endpoint.run_eval(out, cache, triggers=[at_request(4)]).returncode == -signal.SIGKILL
    damaged = _truncate("inputs.json")(out)
    requests_before = len(endpoint.server.requests)
    resumed = endpoint.run_eval(out, cache, "--resume")
    assert resumed.returncode == 2 and "Traceback" not in resumed.stderr, resumed.stderr
    assert resumed.stderr.strip().splitlines()[-1].startswith(
        f"memevo: error: {damaged}: damaged: invalid JSON ("), resumed.stderr
    assert "restore it from a backup, or delete it and resume (the inputs given then are recorded again" in \
        resumed.stderr
    assert len(endpoint.server.requests) == requests_before


@pytest.fixture
def small_disk(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A real 1 MiB file system (tmpfs), so a run meets a real full disk; skipped where it cannot be mounted."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)], capture_output=True,
                             check=False) if os.geteuid() == 0 else None
    if mounted is None or mounted.returncode != 0:
        pytest.skip("mounting a small tmpfs needs root and the right to mount")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def _fill(disk: Path, leave: int) -> Path:
    """A file taking all but ``leave`` bytes of ``disk``."""
    filler = disk / "filler"
    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    filler.write_bytes(b"\0" * max(free - leave, 0))
    return filler


@pytest.mark.parametrize("space", [8, 84, 108, 180], ids=lambda kib: f"{kib} KiB left")
def test_a_full_disk_is_one_line_with_the_resume_command_and_the_resume_ends_as_the_uninterrupted_run(
    space: int, small_disk: Path, endpoint: EvalEndpoint, reference: tuple[Path, int], tmp_path: Path
) -> None:
    out, cache = small_disk / "out", tmp_path / "cache"  # the response cache is on another disk
    # The run writes about 200 KiB and keeps 64 KiB allocated for its usage ledger: with 8 KiB left it stops while
    # claiming the folder, with more during the upper bound, the first user, the second.
    filler = _fill(small_disk, leave=space * 1024)
    before = endpoint.answered
    failed = endpoint.run_eval(out, cache, "--upper-bound")
    assert failed.returncode == 1 and "Traceback" not in failed.stderr, failed.stderr
    line = failed.stderr.strip().splitlines()[-1]
    full = r"memevo: run failed: the disk is full( \(writing [^)]+\))?: No space left on device; "
    during_run = re.fullmatch(
        f"{full}finished work is saved: free space, then resume with: memevo eval --agent "
        f"{re.escape(str(small_disk / 'agent.yaml'))} --env {re.escape(str(FIXTURE))} --out {re.escape(str(out))} "
        "--upper-bound --max-concurrent-users 1 --resume", line)  # the template simulator is the default
    at_claim = re.fullmatch(f"{full}free space, then run the command again( with --resume)?", line)  # before the run
    assert during_run or at_claim, failed.stderr
    filler.unlink()  # space freed
    resume = ("--resume",) if during_run or (at_claim and at_claim.group(2)) else ()
    resumed = endpoint.run_eval(out, cache, "--upper-bound", *resume)
    assert resumed.returncode == 0, resumed.stderr
    assert _results(out) == _results(reference[0])
    assert _counts_what_was_served(out, endpoint.answered - before)  # the tables run beside the episodes
