"""Damaged files in a finished evolution's folder, resumed with ``memevo evolve --resume`` through the kill harness
(tests/evolve/test_evolve_kills.py; its endpoint and fork server are TEST DOUBLES).

A file the resume recomputes (a generation's outcome, the split) is set aside with one warning line
each (the result is written again without being read), and the run ends exactly as before: result, MLflow rows, Prompt Registry, Optuna trials, and
no request to the endpoint. Any other damaged file ends the resume with exit 2 and one line naming the file, what to do
and the resume command; doing what it says then finishes the run as before.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memevo.evolve.records import EvolutionResult
from tests.doubles.category_backend import CategoryBackend, category_world
from tests.doubles.kill_points import start_fork_server
from tests.doubles.killing_endpoint import KillingEndpoint
from tests.evolve.test_evolve_kills import PRELOADED, WORLD, _run, _state, _write

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")


@pytest.fixture(scope="module")
def endpoint():  # type: ignore[no-untyped-def]
    start_fork_server(PRELOADED)
    with KillingEndpoint(CategoryBackend(category_world(**WORLD)).http_reply) as killing:
        yield killing


@pytest.fixture(scope="module")
def finished(endpoint: KillingEndpoint, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One finished evolution: its config, folder and state (each test leaves it finished as it found it)."""
    folder = tmp_path_factory.mktemp("finished")
    config = _write(folder, endpoint.url, "evolve")
    code, output = _run(endpoint, "evolve", config, folder / "out", resume=False)
    assert code == 0, output[-3000:]
    return {"config": config, "out": folder / "out", "state": _state(folder / "out", "evolve")}


def _cut(path: Path) -> Path:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    return path


def _seed_id(out: Path) -> str:
    return EvolutionResult.model_validate_json((out / "result.json").read_text(encoding="utf-8")).seed.id


def _resume(endpoint: KillingEndpoint, finished: dict[str, Any]) -> tuple[int, str]:
    return _run(endpoint, "evolve", finished["config"], finished["out"], resume=True)


def test_damaged_files_that_resume_recomputes_are_set_aside_and_the_run_ends_as_before(
    endpoint: KillingEndpoint, finished: dict[str, Any]
) -> None:
    out = finished["out"]
    _cut(out / "result.json")  # a resume writes it again without reading it
    damaged = [_cut(out / "generations" / "gen_001" / "outcome.json")]
    (out / "split.json").write_text("garbage", encoding="utf-8")
    damaged.append(out / "split.json")
    before = endpoint.answered
    code, output = _resume(endpoint, finished)
    assert code == 0, output[-3000:]
    for path in damaged:
        lines = [line for line in output.splitlines() if f"{path}: damaged" in line]
        assert len(lines) == 1 and f"set aside as {path}.damaged, it is computed again" in lines[0], output[-3000:]
        assert path.with_name(path.name + ".damaged").exists()
    assert _state(out, "evolve") == finished["state"]
    assert endpoint.answered == before


def test_a_damaged_plan_exits_2_naming_it_and_restoring_it_finishes_the_run(
    endpoint: KillingEndpoint, finished: dict[str, Any]
) -> None:
    plan = finished["out"] / "generations" / "gen_002" / "plan.json"
    intact = plan.read_bytes()
    _cut(plan)
    before = endpoint.answered
    code, output = _resume(endpoint, finished)
    assert code == 2 and "Traceback" not in output, output[-3000:]
    last = output.strip().splitlines()[-1]
    assert last.startswith(f"memevo: error: {plan}: damaged: invalid JSON ("), last
    assert last.endswith(
        "; restore it from a backup, or delete it and resume (its generation's candidates are proposed again, the same "
        "ones while the response cache holds the proposals); resume with: "
        f"memevo evolve {finished['config']} --run-dir {finished['out']} --resume"), last
    plan.write_bytes(intact)  # restored from a backup
    code, output = _resume(endpoint, finished)
    assert code == 0, output[-3000:]
    assert _state(finished["out"], "evolve") == finished["state"]
    assert endpoint.answered == before


def test_a_damaged_summary_of_a_finished_generation_says_to_restore_it(
    endpoint: KillingEndpoint, finished: dict[str, Any]
) -> None:
    summary = finished["out"] / "evals" / _seed_id(finished["out"]) / "val.json"
    intact = summary.read_bytes()
    _cut(summary)
    code, output = _resume(endpoint, finished)
    assert code == 2 and "Traceback" not in output, output[-3000:]
    last = output.strip().splitlines()[-1]
    assert last.startswith(f"memevo: error: {summary}: damaged: invalid JSON ("), last
    assert "once its generation has an outcome.json nothing evaluates it again, so restore it then); resume with: " \
        in last, last
    summary.write_bytes(intact)
    code, output = _resume(endpoint, finished)
    assert code == 0, output[-3000:]
    assert _state(finished["out"], "evolve") == finished["state"]


def test_a_damaged_period_record_of_an_evaluated_candidate_names_the_folder_and_the_remedy(
    endpoint: KillingEndpoint, finished: dict[str, Any]
) -> None:
    out = finished["out"]
    candidate = out / "evals" / _seed_id(out)
    record = sorted((candidate / "test" / "users").glob("*/period_00.json.gz"))[0]
    intact = record.read_bytes()
    _cut(record)
    code, output = _resume(endpoint, finished)
    assert code == 2 and "Traceback" not in output, output[-3000:]
    last = output.strip().splitlines()[-1]
    assert last.startswith(f"memevo: error: {record}: damaged: "), last
    assert f"restore it from a backup, or delete the folder {candidate} and resume (what it holds is played " \
           "again); resume with: memevo evolve " in last, last
    record.write_bytes(intact)
    code, output = _resume(endpoint, finished)
    assert code == 0, output[-3000:]
    assert _state(out, "evolve") == finished["state"]


@pytest.mark.parametrize("name", ["result.json", "generations/gen_001/outcome.json", "config.json"])
def test_a_report_on_a_damaged_record_names_it_and_the_resume_that_writes_it_again(
    name: str, finished: dict[str, Any]
) -> None:
    out = finished["out"]
    path = out / name
    intact = path.read_bytes()
    _cut(path)
    try:
        report = subprocess.run([sys.executable, "-m", "memevo.evolve.cli", "report", str(out)], capture_output=True,
                                text=True, check=False)
    finally:
        path.write_bytes(intact)
    assert report.returncode == 2 and "Traceback" not in report.stderr, report.stderr
    (line,) = report.stderr.strip().splitlines()
    assert line.startswith(f"memevo: error: {path}: damaged: invalid JSON ("), line
    assert line.endswith(f"; resume the run to write it again: memevo evolve CONFIG --run-dir {out} --resume"), line
