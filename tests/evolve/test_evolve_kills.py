"""Kill harness for ``memevo evolve`` (both protocols) and ``memevo ablate``: ``kill -9`` at many points, resume,
compare with an uninterrupted run.

Each process is the ``memevo`` command line in a child forked from a fork server that imported the heavy
modules once (no start-up cost; tests/doubles/kill_points.py) against the fault-injecting test server answering like the category double
(tests/doubles/killing_endpoint.py, tests/doubles/category_backend.py; TEST DOUBLES). Kill points: at a
request number or the first request after a run-folder file exists (the server kills the client before
answering), and at a call of a function that no request marks (Optuna's ask, MLflow writes, the Prompt
Registry), planted in the child. Each plan kills one process after another at its points, then a last
process must finish. The endpoint serves one request at a time, so every answered request was counted by
the client before its next one.

After the last resume the run must equal the uninterrupted one: result.json (without usage), every MLflow run
(one per key) with its metric rows, params and artifacts, the Prompt Registry's versions and 'best' aliases,
the Optuna trials; and the reported usage must be what the endpoint served to all the plan's processes.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import optuna
import pytest
import yaml

from memevo.environments.amemgym.data.io import save_items
from memevo.evolve.ablation.records import find_arm_records
from tests.doubles.category_backend import CategoryBackend, category_world
from tests.doubles.kill_points import ForkedMemevo, kill_point, start_fork_server
from tests.doubles.killing_endpoint import KillingEndpoint, Signalling, Trigger, after_file, at_request

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")

WORLD = {"n_users": 3, "n_periods": 2}
EVOLVE_KINDS = ("evolve", "in-episode", "evolve-speculative")
"""Kinds run by ``memevo evolve``: the outer loop, AMemGym's in-episode protocol, and the outer loop with speculative
episodes (``episode.speculate``), which must end as the outer loop does; the other is ``ablate``."""
USAGE_METRICS = ("spend/",)
"""Metrics whose value is the usage so far: a kill adds calls, so only their rows are compared."""
COST_METRICS = ("cost_",)
"""A candidate's cost: a kill or speculation adds calls, and whether they were priced decides if ``cost_dollars``
is logged, so these are not compared."""

Kill = Trigger | str
"""A request trigger (killing_endpoint) or a planted kill point (kill_points)."""


def _llm(url: str) -> dict[str, Any]:
    return {"model": "category-double", "base_url": url, "max_concurrency": 1, "max_retries": 0}


def _evolve_config(url: str, name: str) -> dict[str, Any]:
    return {
        "name": name,
        "seed": {"policy": {"kind": "awi", "update_every": 2, "short_term": 0, "llm": _llm(url),
                            "prompts": {"memory_types": "- commute (how the user gets to work)"}}},
        "components": ["memory_types"],
        "data": {"path": "data.json"},
        "feedback": {"mode": "complete"},
        "split": {"train": 1, "val": 1, "test": 1},
        "budget": {"generations": 2, "candidates": 2},
        "episode": {"rounds_init": 1, "rounds_update": 1, "user_concurrency": 1, "candidate_concurrency": 1},
        "hyperparameters": {"update_every": {"choices": [1, 2, 3]}},
        "llm": {"proposer": _llm(url)},
        "tracking": {"enabled": True, "register_prompts": True},
        "optuna": {"n_startup_trials": 1},
    }


def _write(folder: Path, url: str, kind: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    save_items(category_world(**WORLD), folder / "data.json")
    evolve = _evolve_config(url, "kill-evolution")
    if kind in EVOLVE_KINDS:
        path = folder / "evolve.yaml"
        protocol = {"protocol": "amemgym_period", "split": {"train": 0, "val": 0, "test": 2}} if kind == "in-episode" else {}
        if kind == "evolve-speculative":
            protocol = {"episode": {**evolve["episode"], "speculate": "generation"}}
        path.write_text(yaml.safe_dump({**evolve, **protocol}), encoding="utf-8")
        return path
    (folder / "base.yaml").write_text(yaml.safe_dump({**evolve, "budget": {"generations": 1, "candidates": 1}}),
                                      encoding="utf-8")
    path = folder / "ablation.yaml"
    path.write_text(yaml.safe_dump({
        "name": "kill-ablation", "base": "base.yaml", "seeds": [0],
        "arms": [{"name": "no-evolution", "overrides": {"budget": {"generations": 0}}},
                 {"name": "complete", "overrides": {}}],
    }), encoding="utf-8")
    return path


PRELOADED = ("memevo.evolve.cli.main", "memevo.evolve.loop", "memevo.evolve.ablation.run", "memevo.agents.llm.hub",
             "memevo.agents.awi", "dspy", "optuna", "mlflow.genai", "mlflow.store.tracking.sqlalchemy_store",
             "mlflow.store.model_registry.sqlalchemy_store", "alembic", "bm25s", "diskcache", "aiohttp")
"""Imported once by the fork server rather than by every child (most of a small run's time otherwise)."""


@pytest.fixture(scope="module")
def endpoint():  # type: ignore[no-untyped-def]
    start_fork_server(PRELOADED)
    backend = CategoryBackend(category_world(**WORLD))
    with KillingEndpoint(backend.http_reply) as killing:
        yield killing


def _run(endpoint: KillingEndpoint, kind: str, config: Path, out: Path, *, resume: bool,
         kill: Kill | None = None) -> tuple[int, str]:
    """One ``memevo evolve``/``ablate`` process to its end or its kill: (exit code or -signal, its output)."""
    env = {**os.environ, "MEMEVO_CACHE_DIR": str(out.parent / "cache"), "OPENAI_API_KEY": "test"}
    argv = ["evolve" if kind in EVOLVE_KINDS else "ablate", str(config), "--run-dir", str(out),
            *(["--resume"] if resume else [])]
    output = out.parent / f"process-{len(list(out.parent.glob('process-*')))}.log"
    process = endpoint.watch(
        lambda: ForkedMemevo(argv, cwd=out.parent, env=env, kill_at=kill if isinstance(kill, str) else None,
                             output=output),
        out, [kill] if kill is not None and not isinstance(kill, str) else [])
    assert isinstance(process, ForkedMemevo)
    code = process.finish()
    endpoint.done()
    return code, process.text()


# ----- what is compared -----------------------------------------------------------------------------------


def _folders_by_tracking_id(out: Path) -> dict[str, str]:
    """Each evolution folder's MLflow tracking id -> its folder relative to the run folder."""
    return {json.loads(path.read_text())["tracking_id"]: path.parent.relative_to(out).as_posix()
            for path in out.rglob("mlflow_ids.json")}


def _mlflow_rows(out: Path) -> dict[str, Any]:
    """Per run (named by its key, with the folder instead of the tracking id): how many runs have the key,
    status, metric rows (value and step; only the row count for usage metrics), params, artifact files."""
    folders = _folders_by_tracking_id(out)
    with sqlite3.connect(out / "mlflow.db") as db:
        runs = db.execute("SELECT run_uuid, name, status, lifecycle_stage, artifact_uri FROM runs").fetchall()
        tags = dict(((run, key), value) for run, key, value in db.execute("SELECT run_uuid, key, value FROM tags"))
        metrics = db.execute("SELECT run_uuid, key, step, value FROM metrics").fetchall()
        params = db.execute("SELECT run_uuid, key, value FROM params").fetchall()
        experiments = sorted(name for (name,) in db.execute(
            "SELECT name FROM experiments WHERE lifecycle_stage = 'active'"))
    names: dict[str, str] = {}
    for run, name, _, _, _ in runs:
        key = tags.get((run, "memevo.key"))
        if key is not None:
            tracking_id, role = key.split("/", 1)
            names[run] = f"{folders[tracking_id]}:{role}"
        else:
            names[run] = f"{tags.get((run, 'memevo.kind'), '?')}:{name}"
    rows: dict[str, Any] = {"runs per key": Counter(names.values()), "experiments": experiments}
    for run, _, status, stage, artifact_uri in runs:
        metric_rows = sorted((key, step, 0.0 if key.startswith(USAGE_METRICS) or key.endswith((".calls", ".cancelled_calls", ".dollars"))
                              else round(value, 9)) for r, key, step, value in metrics
                             if r == run and not key.startswith(COST_METRICS))
        folder = Path(artifact_uri.removeprefix("file://"))
        rows[names[run]] = {
            "status": (status, stage),
            "metrics": metric_rows,
            "params": sorted((key, value.replace(str(out.resolve()), "OUT")) for r, key, value in params if r == run),
            "artifacts": sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file()),
        }
    return rows


def _registry(out: Path) -> dict[str, Any]:
    """Per registered prompt: its versions (candidate of each) and the candidate its 'best' alias names."""
    with sqlite3.connect(out / "mlflow.db") as db:
        versions = db.execute("SELECT name, version FROM model_versions").fetchall()
        candidates = {(name, version): value for name, version, key, value in
                      db.execute("SELECT name, version, key, value FROM model_version_tags") if key == "candidate_id"}
        aliases = db.execute("SELECT name, alias, version FROM registered_model_aliases").fetchall()
    found: dict[str, Any] = {}
    for name, version in sorted(versions):
        found.setdefault(name, {"versions": [], "aliases": {}})["versions"].append(
            (version, candidates.get((name, version))))
    for name, alias, version in aliases:
        found[name]["aliases"][alias] = candidates.get((name, version))
    return found


def _trials(out: Path) -> dict[str, Any]:
    studies = {}
    for db in sorted(out.rglob("optuna.db")):
        storage = f"sqlite:///{db}"
        for summary in optuna.get_all_study_summaries(storage):
            study = optuna.load_study(study_name=summary.study_name, storage=storage)
            studies[f"{db.parent.relative_to(out)}:{summary.study_name}"] = [
                (t.number, t.state.name, t.params, t.value, t.user_attrs.get("candidate_id")) for t in study.trials]
    return studies


def _results(out: Path, kind: str) -> list[Any]:
    paths = [out / "result.json"] if kind in EVOLVE_KINDS else sorted(out.glob("*/seed-*/result.json"))
    results = []
    for path in paths:
        data = json.loads(path.read_text())
        data.pop("usage")
        results.append(data)
    return results


def _served(out: Path, kind: str) -> int:
    """Requests the run says reached the endpoint (calls minus cache hits), over all its processes."""
    if kind in EVOLVE_KINDS:
        usages = [json.loads((out / "result.json").read_text())["usage"]]
    else:
        usages = [json.loads(record.usage.model_dump_json()) for record in find_arm_records(out)]
    return sum(role["calls"] - role["cache_hits"] for usage in usages for role in usage["by_role"].values())


def _state(out: Path, kind: str) -> dict[str, Any]:
    return {"results": _results(out, kind), "mlflow": _mlflow_rows(out), "registry": _registry(out),
            "trials": _trials(out)}


@pytest.fixture(scope="module")
def references(endpoint: KillingEndpoint, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """The uninterrupted evolution and ablation, and what the endpoint served for each."""
    found = {}
    for kind in (*EVOLVE_KINDS, "ablate"):
        folder = tmp_path_factory.mktemp(f"reference-{kind}")
        before = endpoint.answered
        code, output = _run(endpoint, kind, _write(folder, endpoint.url, kind), folder / "out", resume=False)
        assert code == 0, output[-3000:]
        assert _served(folder / "out", kind) == endpoint.answered - before
        found[kind] = {**_state(folder / "out", kind), "out": folder / "out"}
        assert found[kind]["mlflow"]["experiments"] == [f"kill-{'evolution' if kind in EVOLVE_KINDS else 'ablation'}"]
    return found


TUNER_ASK = "memevo.evolve.tuner:Tuner.ask"
TUNER_TELL = "memevo.evolve.tuner:Tuner.tell"
LOG_GENERATION = "memevo.evolve.tracking.store:Tracker.log_generation"
LOG_BATCH = "mlflow.tracking:MlflowClient.log_batch"
LOG_TEXT = "mlflow.tracking:MlflowClient.log_text"
CREATE_RUN = "mlflow.tracking:MlflowClient.create_run"
REGISTER = "mlflow.genai:register_prompt"
SET_ALIAS = "mlflow.genai:set_prompt_alias"
SAVE_ARM = "memevo.evolve.ablation.run:save_arm_record"

KILL_PLANS: dict[str, tuple[str, list[Kill]]] = {
    # one process per kill, in turn; then one that must finish
    "evolve: mid generation 0; between ask and plan; a run created; in metrics; a prompt registered": ("evolve", [
        at_request(9),
        kill_point(TUNER_ASK, 2, "after"),  # the seed's trial is the first ask
        kill_point(CREATE_RUN, 1, "after"),  # generation 1's run: generation 0 was logged
        kill_point(LOG_BATCH, 3, "after"),  # generation 1's second candidate's metrics
        kill_point(REGISTER, 1, "after"),  # generation 1's kept candidate, before its version was noted
    ]),
    "evolve: after a generation's runs; before an alias; after a tell; after a plan; in closing artifacts": ("evolve", [
        kill_point(LOG_GENERATION, 2, "after"),  # generation 1 logged, its prompt versions not yet
        kill_point(SET_ALIAS, 1, "before"),
        kill_point(TUNER_TELL, 1, "after"),
        after_file("generations/gen_002/plan.json"),
        kill_point(LOG_TEXT, 1, "after", "out/result.json"),
    ]),
    "in-episode: at request 3; a user's first step saved; at a resume's request 6; in closing metrics": ("in-episode", [
        at_request(3),
        lambda arrived, out: any(out.glob("in_episode/*/period_00.json")),  # a step on disk, its period not yet
        at_request(6),
        kill_point(LOG_BATCH, 1, "after"),
    ]),
    "ablate: its parent run created; mid-arm; an arm saved before its tags; mid-plan; in the summary": ("ablate", [
        kill_point(CREATE_RUN, 1, "after"),
        at_request(40),
        kill_point(SAVE_ARM, 1, "after"),
        after_file("complete/seed-0/generations/gen_001/trials.json"),
        kill_point(LOG_BATCH, 1, "after", "out/ablation.md"),
    ]),
    "evolve, speculating: mid generation 0; after a plan; in closing artifacts": ("evolve-speculative", [
        at_request(9),
        after_file("generations/gen_001/plan.json"),
        kill_point(LOG_TEXT, 1, "after", "out/result.json"),
    ]),
    "evolve: SIGTERM mid generation 0; SIGINT mid generation 1": ("evolve", [
        Signalling(at_request(9), signal.SIGTERM),
        Signalling(after_file("generations/gen_001/plan.json"), signal.SIGINT),
    ]),
    "ablate: SIGTERM mid-arm; SIGINT in the next": ("ablate", [
        Signalling(at_request(40), signal.SIGTERM),
        Signalling(at_request(20), signal.SIGINT),
    ]),
}


@pytest.mark.parametrize("plan", list(KILL_PLANS), ids=list(KILL_PLANS))
def test_killed_run_resumes_to_the_uninterrupted_one(plan: str, endpoint: KillingEndpoint,
                                                     references: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    kind, kills = KILL_PLANS[plan]
    config, out = _write(tmp_path, endpoint.url, kind), tmp_path / "out"
    before = endpoint.answered
    for number, kill in enumerate(kills):
        code, output = _run(endpoint, kind, config, out, resume=bool(number), kill=kill)
        if isinstance(kill, Signalling):  # stopped as by a user: the line says how to resume
            assert code == 128 + kill.signal, (plan, number, output[-3000:])
            command = "evolve" if kind in EVOLVE_KINDS else "ablate"
            assert (f"memevo: interrupted by {signal.Signals(kill.signal).name}; finished work is saved, resume with: "
                    f"memevo {command} {config} --run-dir {out} --resume") in output, output[-3000:]
        else:
            assert code == -signal.SIGKILL, (plan, number, output[-3000:])
        assert endpoint.triggers == [], "a request trigger never fired"
    code, output = _run(endpoint, kind, config, out, resume=True)
    assert code == 0, output[-3000:]
    state = _state(out, kind)
    reference = references["evolve" if kind == "evolve-speculative" else kind]  # speculation changes no result
    assert state["results"] == reference["results"]
    assert state["mlflow"] == reference["mlflow"]
    assert state["registry"] == reference["registry"]
    assert state["trials"] == reference["trials"]
    assert _served(out, kind) == endpoint.answered - before


@pytest.mark.parametrize(("made_by", "command"), [("evolve", "ablate"), ("ablate", "evolve")])
def test_a_finished_run_of_another_kind_is_left_as_it_is(made_by: str, command: str, endpoint: KillingEndpoint,
                                                         references: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    out = references[made_by]["out"]
    config = _write(tmp_path, endpoint.url, command)
    before = endpoint.answered
    code, output = _run(endpoint, command, config, out, resume=True)
    assert code == 2, output[-3000:]
    kinds = {"evolve": ("an evolution", "memevo evolve"), "ablate": ("an ablation", "memevo ablate")}
    assert (f"holds {kinds[made_by][0]} run (made by {kinds[made_by][1]}), not {kinds[command][0]} run: "
            f"{kinds[command][1]} cannot start or resume one here") in output, output[-3000:]
    assert endpoint.answered == before
    state = _state(out, made_by)
    assert {key: state[key] for key in ("results", "mlflow", "registry", "trials")} == \
        {key: references[made_by][key] for key in ("results", "mlflow", "registry", "trials")}
