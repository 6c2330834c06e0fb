"""Run-folder guards: one process per folder (a second one exits 2 naming the first's pid, a killed holder's
lock is taken over), its kind and inputs checked on resume (a damaged record of either named, or repaired where the
folder shows what it held), a full disk at the claim in one line, and the per-call usage ledger."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memevo.agents.llm.accounting import RoleUsage
from memevo.core.errors import DamagedFileError, RunFailedError, UserInputError
from memevo.environments import rundir
from memevo.environments.rundir import (
    INPUTS_FILE,
    KIND_FILE,
    LEDGER_FILE,
    LOCK_FILE,
    RunKind,
    UsageLedger,
    changed_fields,
    check_inputs,
    claim_run_folder,
    read_ledger,
)
from tests.doubles.fault_server import FaultServer

FIXTURE = Path(__file__).parents[1] / "fixtures" / "amemgym_small.json"

HOLDER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from memevo.environments.rundir import claim_run_folder
    with claim_run_folder(Path(sys.argv[1]), field="out", kind=sys.argv[2]):
        print("held", flush=True)
        sys.stdin.readline()
""")


def _hold(folder: Path, kind: str = "eval") -> subprocess.Popen[str]:
    """A separate process that holds ``folder`` (a run of ``kind``) until its stdin closes (or it is killed)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(folder), kind], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def _memevo(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memevo.evolve.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=300,
    )


@pytest.mark.parametrize("command", ["eval", "evolve"])
def test_second_process_exits_2_naming_the_holder_then_takes_over_its_stale_lock(command: str, tmp_path: Path) -> None:
    folder = tmp_path / "run"
    with FaultServer() as server:
        env = {
            "MEMEVO_CACHE_DIR": str(tmp_path / "cache"),
            "OPENAI_API_KEY": "test",
            "OPENAI_BASE_URL": server.url,
            "MEMEVO_MODEL": "gpt-4.1-mini",
        }
        if command == "eval":
            (tmp_path / "agent.yaml").write_text("kind: native\n")
            args = [
                "eval",
                "--agent",
                str(tmp_path / "agent.yaml"),
                "--env",
                str(FIXTURE),
                "--out",
                str(folder),
                "--simulator",
                "template",
                "--resume",
            ]
        else:
            (tmp_path / "evolve.yaml").write_text(
                f"seed: {{policy: {{kind: native}}}}\ndata: {{path: {FIXTURE}}}\nsplit: {{train: 1, val: 1, test: 0}}\n"
                "protocol: amemgym_period\ntracking: {enabled: false}\n"
            )
            args = ["evolve", str(tmp_path / "evolve.yaml"), "--run-dir", str(folder), "--resume"]
        holder = _hold(folder, "eval" if command == "eval" else "evolution")
        try:
            second = _memevo(*args, env=env)
        finally:
            holder.send_signal(signal.SIGKILL)
            holder.wait()
        assert second.returncode == 2, second.stderr
        assert f"run folder is in use by process {holder.pid}" in second.stderr and "Traceback" not in second.stderr
        assert server.requests == []
    # the holder died without cleaning up: its lock file is still there, and it is taken over
    assert (folder / LOCK_FILE).read_text().strip() == str(holder.pid)
    with claim_run_folder(folder, field="out", kind="eval" if command == "eval" else "evolution"):
        assert (folder / LOCK_FILE).read_text().strip() == str(os.getpid())


def test_lock_is_exclusive_within_one_process_too(tmp_path: Path) -> None:
    with claim_run_folder(tmp_path / "run", field="run_dir", kind="eval"):
        with pytest.raises(UserInputError, match=f"in use by process {os.getpid()}"):
            with claim_run_folder(tmp_path / "run", field="run_dir", kind="eval"):
                pass
    with claim_run_folder(tmp_path / "run", field="run_dir", kind="eval"):  # released at exit
        pass


def test_a_refused_start_leaves_nothing_behind_but_keeps_a_started_run(tmp_path: Path) -> None:
    with pytest.raises(UserInputError):
        with claim_run_folder(tmp_path / "a" / "b", field="out", kind="eval"):
            raise UserInputError("bad data")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(UserInputError):
        with claim_run_folder(tmp_path / "run", field="out", kind="eval"):
            (tmp_path / "run" / "result.json").write_text("{}")
            raise UserInputError("bad data after the first write")
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["result.json", "run_kind.json"]


def test_a_claim_records_the_folder_kind_and_a_refused_first_start_removes_it(tmp_path: Path) -> None:
    with claim_run_folder(tmp_path / "run", field="run_dir", kind="ablation"):
        assert json.loads((tmp_path / "run" / KIND_FILE).read_text()) == {"kind": "ablation"}
    with claim_run_folder(tmp_path / "run", field="run_dir", kind="ablation"):  # the same kind resumes
        pass
    with pytest.raises(UserInputError, match="holds an ablation run .* not an evolution run"):
        with claim_run_folder(tmp_path / "run", field="run_dir", kind="evolution"):
            pass
    with pytest.raises(UserInputError):
        with claim_run_folder(tmp_path / "new", field="out", kind="eval"):
            raise UserInputError("nothing to resume")
    assert not (tmp_path / "new").exists()


def test_a_damaged_kind_record_without_other_files_is_one_line_naming_it_and_the_fix(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / KIND_FILE).write_text('{"kind": ')
    with pytest.raises(DamagedFileError, match="write .* into it, whichever command made the folder") as refused:
        with claim_run_folder(tmp_path / "run", field="run_dir", kind="evolution"):
            pass
    assert refused.value.source == str(tmp_path / "run" / KIND_FILE)
    assert (tmp_path / "run" / KIND_FILE).read_text() == '{"kind": '


@pytest.mark.parametrize(("marker", "kind", "other"), [("config.json", "evolution", "ablation"),
                                                       ("ablation.json", "ablation", "eval")])
def test_a_damaged_kind_record_is_written_again_from_the_folders_files_saying_so(
    marker: str, kind: RunKind, other: RunKind, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / marker).write_text("{}")
    (tmp_path / "run" / KIND_FILE).write_bytes(b"\x00\xff")
    with pytest.raises(UserInputError, match=f"holds an? {kind} run"):  # the files still tell the kind apart
        with claim_run_folder(tmp_path / "run", field="run_dir", kind=other):
            pass
    with claim_run_folder(tmp_path / "run", field="run_dir", kind=kind):
        pass
    assert json.loads((tmp_path / "run" / KIND_FILE).read_text()) == {"kind": kind}
    assert f"{tmp_path / 'run' / KIND_FILE}: damaged: " in caplog.text
    assert f"written again as {kind!r}, the kind its folder's files show" in caplog.text


def test_a_full_disk_while_claiming_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(path: Path, data: object) -> None:  # TEST DOUBLE: a disk with no space left
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(rundir, "write_json_atomic", full)
    with pytest.raises(RunFailedError) as failed:
        with claim_run_folder(tmp_path / "run", field="run_dir", kind="evolution"):
            pass
    assert str(failed.value) == (f"the disk is full (writing {tmp_path / 'run' / KIND_FILE}): No space left on device; "
                                 "free space, then run the command again")


def test_a_damaged_record_of_inputs_names_it_and_the_remedy(tmp_path: Path) -> None:
    (tmp_path / INPUTS_FILE).write_text('{"data": {"u1"')
    with pytest.raises(DamagedFileError) as damaged:
        check_inputs(tmp_path, {"data": {"u1": "aa"}})
    assert damaged.value.source == str(tmp_path / INPUTS_FILE)
    assert str(damaged.value).startswith(f"{tmp_path / INPUTS_FILE}: damaged: invalid JSON (")
    assert damaged.value.remedy.startswith("restore it from a backup, or delete it and resume")


def test_changed_fields_name_every_difference() -> None:
    stored = {"config": {"budget": {"generations": 1}, "name": "x"}, "data": {"u1": "aa", "u2": "bb"}}
    current = {"config": {"budget": {"generations": 2}, "name": "x"}, "data": {"u1": "aa", "u2": "cc", "u3": "dd"}}
    assert changed_fields(stored, current) == ["config.budget.generations", "data.u2", "data.u3"]
    assert changed_fields(stored, stored) == []


def test_check_inputs_records_then_refuses_a_change(tmp_path: Path) -> None:
    check_inputs(tmp_path, {"data": {"u1": "aa"}, "policy": {"kind": "awi"}})
    assert json.loads((tmp_path / INPUTS_FILE).read_text()) == {"data": {"u1": "aa"}, "policy": {"kind": "awi"}}
    check_inputs(tmp_path, {"data": {"u1": "aa"}, "policy": {"kind": "awi"}})
    with pytest.raises(UserInputError) as error:
        check_inputs(tmp_path, {"data": {"u1": "zz"}, "policy": {"kind": "awi"}})
    assert error.value.field == "data.u1" and "inputs changed since this run started (data.u1)" in str(error.value)


def test_usage_ledger_carries_every_count_across_processes(tmp_path: Path) -> None:
    first = UsageLedger(tmp_path / LEDGER_FILE)
    first.record_call("agent", model="gpt-4.1-mini", prompt_tokens=10, completion_tokens=2, wall_s=0.1, cached=False)
    first.record_retry("agent")
    with (tmp_path / LEDGER_FILE).open("a") as ledger:
        ledger.write('{"role": "agent", "calls"')  # a line torn by a kill
    second = UsageLedger(tmp_path / LEDGER_FILE)
    second.record_call("agent", model="gpt-4.1-mini", prompt_tokens=10, completion_tokens=2, wall_s=0.1, cached=True)
    usage = second.report().by_role["agent"]
    assert (usage.calls, usage.cache_hits, usage.retries, usage.prompt_tokens) == (2, 1, 1, 20)
    assert usage.dollars == pytest.approx(first.report().by_role["agent"].dollars)
    assert UsageLedger(tmp_path / LEDGER_FILE).report().by_role["agent"] == usage.model_copy()
    assert isinstance(usage, RoleUsage)


def test_a_ledger_meeting_a_full_disk_keeps_the_count_it_made_and_then_stops_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(fd: int, offset: int, length: int) -> None:  # TEST DOUBLE: no space left to reserve
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    ledger = UsageLedger(tmp_path / LEDGER_FILE)
    assert os.stat(tmp_path / LEDGER_FILE).st_blocks * 512 >= rundir.LEDGER_RESERVE_BYTES  # reserved, size still 0
    assert os.stat(tmp_path / LEDGER_FILE).st_size == 0
    monkeypatch.setattr(rundir, "allocate_past_end", full)
    monkeypatch.setattr(rundir, "LEDGER_RESERVE_BYTES", 1 << 40)  # the next count reserves again
    with pytest.raises(OSError) as failed:
        ledger.record_call("agent", model="m", prompt_tokens=3, completion_tokens=1, wall_s=0.1, cached=False)
    assert failed.value.errno == errno.ENOSPC
    assert read_ledger(tmp_path / LEDGER_FILE).by_role["agent"].calls == 1  # the count is on disk
