"""MLflow tracking of an evolution: a parent run, one child per generation, one grandchild per candidate.

Every write happens exactly once in the store, whatever instruction a kill interrupts:

- a run is found by its key tag (``memevo.key``: the run folder's tracking id and the run's role, e.g.
  ``gen2/g2c0-...``) before one is created, so a kill between creating it and noting its id in
  ``<run_dir>/mlflow_ids.json`` does not make a second one;
- writes are repeatable: params and tags with the same value, artifacts at the same path and the same
  dataset input are stored once by MLflow; a metric row is identical on a repeat because its timestamp is
  fixed (saved in ``mlflow_ids.json``) before its first attempt, and MLflow keeps one row per identical
  (key, value, step, timestamp);
- a run is marked done only after all its writes, so a resume repeats an interrupted run's writes and
  skips finished runs;
- a prompt version is looked up by its candidate and the run's tracking id before one is registered.

Logging goes through ``MlflowClient`` with explicit run ids (no global active run), which stays correct
while candidates are evaluated concurrently.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import mlflow
from mlflow import MlflowClient
from mlflow.entities import DatasetInput, Metric, Param, Run
from mlflow.exceptions import MlflowException
from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID
from sqlalchemy.exc import IntegrityError

from memevo.core.atomic_files import write_json_atomic
from memevo.core.errors import UserInputError
from memevo.environments.metrics import UPPER_BOUND_FILE, UpperBoundTable
from memevo.evolve.tracking.payloads import BEST_TAG, ROLE_TAG
from memevo.evolve.tracking.stores import MLFLOW_IDS_FILE, default_tracking_uri, experiment_id, open_tracking_store

log = logging.getLogger("memevo.evolve")
T = TypeVar("T")

PARENT_TAG = MLFLOW_PARENT_RUN_ID
DEFAULT_EXPERIMENT_ID = "0"
KEY_TAG = "memevo.key"
"""The tag a run is found by on resume: ``<tracking id of the run folder>/<role key>``."""
RUN_TAG = "memevo.tracking_id"
"""The tag of a prompt version naming the evolution (its tracking id) that registered it."""
FOLDER_TAG = "memevo.run_folder"
"""On the parent run: the run folder it was made for (found again when ``mlflow_ids.json`` is lost)."""

def retire_default_experiment(client: MlflowClient) -> None:
    """Delete (hide) the empty "Default" experiment MLflow's SQLite store creates with its tables; only called
    for a store memevo made for this run, never for one a user configured."""
    default = client.get_experiment(DEFAULT_EXPERIMENT_ID)
    if default.lifecycle_stage == "active" and not client.search_runs([DEFAULT_EXPERIMENT_ID], max_results=1):
        client.delete_experiment(DEFAULT_EXPERIMENT_ID)


def read_ids(path: Path) -> dict[str, Any] | str | None:
    """``mlflow_ids.json`` as noted, None when it does not exist, or the reason it cannot be read."""
    if not path.exists():
        return None
    try:
        ids = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        return f"{type(error).__name__}: {error}"
    return ids if isinstance(ids, dict) else f"holds a {type(ids).__name__}, not an object"


def note_first(path: Path, ids: dict[str, Any]) -> dict[str, Any]:
    """``ids`` noted at ``path`` unless another process noted its own there first (written whole, by a hard link
    that fails when the path exists): then those."""
    write_json_atomic(draft := path.with_name(f".{path.name}.{uuid.uuid4().hex}"), ids)
    try:
        os.link(draft, path)
    except FileExistsError:
        first = read_ids(path)
        if isinstance(first, dict) and "tracking_id" in first:
            return first
        write_json_atomic(path, ids)
    finally:
        draft.unlink()
    return ids


def rebuilt_ids(client: MlflowClient, experiment_id: str, parent: Run) -> dict[str, Any]:
    """``mlflow_ids.json`` rebuilt from the runs of one evolution (its parent's key tag gives the tracking id): each
    run by its key, done when MLflow says it finished, and the timestamps of the metric rows of runs not done, so
    a repeated write stores no second row."""
    tracking_id = parent.data.tags[KEY_TAG].rsplit("/parent", 1)[0]
    ids: dict[str, Any] = {"tracking_id": tracking_id, "stamps": {}}
    runs = client.search_runs([experiment_id], f"tags.`{KEY_TAG}` LIKE '{tracking_id}/%'", max_results=50000)
    for run in runs:
        key = run.data.tags[KEY_TAG].removeprefix(f"{tracking_id}/")
        ids[key] = {"id": run.info.run_id, "done": run.info.status == "FINISHED"}
        if key == "parent":
            ids[key]["params_logged"] = bool(run.data.params)
        if run.info.status == "FINISHED":
            continue
        for metric in run.data.metrics:
            for row in client.get_metric_history(run.info.run_id, metric):
                ids["stamps"].setdefault(f"parent@{row.step}" if key == "parent" else key, row.timestamp)
    return ids


def find_run(client: MlflowClient, experiment_id: str, tag: str, value: str) -> str | None:
    """The id of the live run of ``experiment_id`` whose ``tag`` is ``value``, if there is one."""
    found = client.search_runs([experiment_id], f"tags.`{tag}` = '{value}'", max_results=1)
    return found[0].info.run_id if found else None


class Tracker:
    """Writes one evolution to an MLflow store (default: SQLite next to the run)."""

    def __init__(self, *, run_dir: Path, uri: str | None, experiment: str,
                 experiment_tags: dict[str, str] | None = None) -> None:
        self.run_dir = run_dir
        self.uri = uri or default_tracking_uri(run_dir)
        self.ids_path = run_dir / MLFLOW_IDS_FILE
        noted = read_ids(self.ids_path)
        mlflow.set_tracking_uri(self.uri)
        self.client = open_tracking_store(self.uri)
        if uri is None:
            retire_default_experiment(self.client)
        location = (run_dir / "mlartifacts").resolve().as_uri() if self.uri.startswith("sqlite") else None
        self.experiment_id = experiment_id(self.client, self.uri, experiment, artifact_location=location,
                                           tags=experiment_tags)
        # registered prompt versions are linked to the active experiment: this one, not "Default"
        mlflow.set_experiment(experiment_id=self.experiment_id)
        self.ids = noted if isinstance(noted, dict) and self._in_store(noted) else self._recover(noted, own=uri is None)
        if "tracking_id" not in self.ids:  # saved before any run exists: every key tag of this folder uses it
            self.ids["tracking_id"] = uuid.uuid4().hex[:16]
            if noted is None:  # workers of one run may open their trackers at once: the first id noted is the run's
                self.ids = noted = note_first(self.ids_path, self.ids)
        if self.ids != noted:  # unchanged, not written: a worker of the same run may be writing it meanwhile
            self._save_ids()

    def reread(self) -> None:
        """Continue from what the file notes: another worker process of the same run may have logged since."""
        noted = read_ids(self.ids_path)
        if isinstance(noted, dict) and noted.get("tracking_id") == self.tracking_id:
            self.ids = noted

    def _in_store(self, ids: dict[str, Any]) -> bool:
        """Whether noted ids belong to this store: a tracking id, and the parent run (if noted) exists in it."""
        if not isinstance(ids.get("tracking_id"), str):
            return False
        parent = ids.get("parent", {}).get("id") if isinstance(ids.get("parent"), dict) else None
        return parent is None or find_run(self.client, self.experiment_id, KEY_TAG,
                                          f"{ids['tracking_id']}/parent") == parent

    def _recover(self, noted: object, *, own: bool) -> dict[str, Any]:
        """The ids of this folder's runs rebuilt from the store, when ``mlflow_ids.json`` is missing, damaged or
        names runs the store does not hold: the parent run tagged with this folder (in the run folder's own
        store, its one parent run), so a resume continues it instead of leaving it RUNNING beside a second one.
        A damaged file with nothing to rebuild from stops with one line naming the file and the fix."""
        parents = self.client.search_runs([self.experiment_id], f"tags.`{KEY_TAG}` LIKE '%/parent'")
        mine = [run for run in parents if run.data.tags.get(FOLDER_TAG) == str(self.run_dir.resolve())]
        if not mine and own and len(parents) == 1:
            mine = parents  # the folder's own store was moved or copied with it
        if len(mine) == 1:
            state = "missing" if noted is None else f"damaged ({noted})" if isinstance(noted, str) else "stale"
            log.warning("%s was %s: rebuilt from the MLflow store %s (parent run %s)", self.ids_path, state, self.uri,
                        mine[0].info.run_id)
            return rebuilt_ids(self.client, self.experiment_id, mine[0])
        if noted is None:
            return {}
        if isinstance(noted, dict) or not parents:
            log.warning("%s %s, which holds no run of this folder: new runs are started there", self.ids_path,
                        f"is damaged ({noted})" if isinstance(noted, str) else f"names runs not in {self.uri}")
            return {}
        raise UserInputError(f"is damaged ({noted}), and {self.uri} holds runs of other folders but none of this "
                             "one: restore the file from a copy, or delete it and resume (a new parent run is "
                             "started)", source=str(self.ids_path))

    @property
    def tracking_id(self) -> str:
        return self.ids["tracking_id"]

    def _save_ids(self) -> None:
        write_json_atomic(self.ids_path, self.ids)

    def _run(self, key: str, name: str, parent: str | None, tags: dict[str, str] | None = None, *,
             start_time: int | None = None) -> str:
        """The run for ``key``: noted, else found by its key tag (created by a killed process), else created
        (``start_time``: when what it records began, epoch ms; default now)."""
        entry = self.ids.get(key)
        if entry:
            return entry["id"]
        key_tag = f"{self.tracking_id}/{key}"
        run_id = find_run(self.client, self.experiment_id, KEY_TAG, key_tag)
        if run_id is None:
            run_tags = (tags or {}) | ({PARENT_TAG: parent} if parent else {}) | {KEY_TAG: key_tag}
            run_id = self.client.create_run(self.experiment_id, start_time=start_time, run_name=name,
                                            tags=run_tags).info.run_id
        self.ids[key] = {"id": run_id, "done": False}
        self._save_ids()
        return run_id

    def _done(self, key: str) -> bool:
        return bool(self.ids.get(key, {}).get("done"))

    def _finish(self, key: str, end_time: int | None = None) -> None:
        self.client.set_terminated(self.ids[key]["id"], end_time=end_time)
        self.ids[key]["done"] = True
        self._save_ids()

    @property
    def parent_id(self) -> str:
        return self.ids["parent"]["id"]

    def start(self, name: str, params: dict[str, Any], config_payload: dict[str, Any],
              dataset: DatasetInput | None = None) -> None:
        """Open (or reopen) the parent run and record what defines this evolution (``dataset``: its user split)."""
        self.reread()
        claimed = self.run_dir / "config.json"  # the run folder's first write: when the evolution started
        started = int(claimed.stat().st_mtime * 1000) if claimed.exists() else None
        run_id = self._run("parent", name, None, {ROLE_TAG: "evolution", FOLDER_TAG: str(self.run_dir.resolve())},
                           start_time=started)
        if not self.ids["parent"].get("params_logged"):
            flat = {key: str(value)[:500] for key, value in params.items()}
            self.client.log_batch(run_id, params=[Param(k, v) for k, v in sorted(flat.items())])
            self.client.log_dict(run_id, config_payload, "config.json")
            if dataset is not None:
                self._log_dataset(run_id, dataset)
            self.ids["parent"]["params_logged"] = True
            self._save_ids()

    def _log_dataset(self, run_id: str, dataset: DatasetInput) -> None:
        """MLflow adds a dataset to the experiment when no row has its name and digest, then links it to the run, in
        one transaction: two evolutions of one split starting together on a shared store can both find it missing,
        and the second insert fails on the unique key. The failed transaction is rolled back whole, so once more
        finds the other's row and only links it."""
        _once_more_after_a_lost_race(lambda: self.client.log_inputs(run_id, [dataset]),
                                     lambda error: isinstance(error.__cause__, IntegrityError))

    def candidate_run_id(self, generation: int, label: str) -> str | None:
        """The MLflow run of a candidate whose generation has been logged (None before that)."""
        return self.ids.get(f"gen{generation}/{label}", {}).get("id")

    def log_generation(
        self,
        generation: int,
        metrics: dict[str, float],
        candidates: list[dict[str, Any]],
        *,
        run_name: str | None = None,
        tags: dict[str, str] | None = None,
    ) -> None:
        """One child run for the generation and one nested run per candidate, all at step=generation.

        Each candidate entry: ``label``, ``metrics`` (name -> value), ``params``, ``artifacts`` (artifact
        path -> text) and optionally ``tags`` and ``span`` (when its evaluations started and ended, epoch ms: the
        run's times, and the generation's from the first start to the last end). ``metrics`` go on the generation
        run and the parent.
        """
        key = f"gen{generation}"
        spans = [entry["span"] for entry in candidates if entry.get("span")]
        gen_run = self._run(key, run_name or f"generation-{generation}", self.parent_id, tags,
                            start_time=min((start for start, _ in spans), default=None))
        if self._done(key):
            return
        upper_bound = self._upper_bound_metrics()
        for entry in candidates:
            cand_key = f"{key}/{entry['label']}"
            span = entry.get("span") or (None, None)
            cand_run = self._run(cand_key, entry["label"], gen_run, entry.get("tags"), start_time=span[0])
            if self._done(cand_key):
                continue
            self._log_metrics(cand_run, entry["metrics"] | upper_bound, generation, stamp_key=cand_key)
            params = {k: str(v)[:500] for k, v in entry["params"].items()}
            self.client.log_batch(cand_run, params=[Param(k, v) for k, v in sorted(params.items())])
            self._log_texts(cand_run, entry["artifacts"])
            self._finish(cand_key, end_time=span[1])
        self._log_metrics(gen_run, metrics, generation, stamp_key=key)
        self._log_metrics(self.parent_id, metrics, generation, stamp_key=f"parent@{generation}")
        self._finish(key, end_time=max((end for _, end in spans), default=None))

    def update_candidate(self, generation: int, label: str, metrics: dict[str, float], artifacts: dict[str, str], *,
                         key: str) -> None:
        """What a candidate measured after its generation was logged (a parent completing its train users), on the
        candidate's own run: metrics at its generation's step, like the rest of its scores, and artifacts replacing
        the ones at the same paths. Repeatable: a repeat under the same ``key`` stores no second metric row, and an
        artifact written again replaces its file."""
        self.reread()
        cand_key = f"gen{generation}/{label}"
        run_id = self.ids[cand_key]["id"]
        self._log_metrics(run_id, metrics, generation, stamp_key=f"{cand_key}@{key}")
        self._log_texts(run_id, artifacts)

    def _log_texts(self, run_id: str, artifacts: dict[str, str]) -> None:
        """Text artifacts (artifact path -> text); MLflow writes each at its path, replacing an earlier one."""
        for path, text in artifacts.items():
            self.client.log_text(run_id, text, path)

    def log_metrics(self, metrics: dict[str, float], *, step: int) -> None:
        """Metrics on the parent run at ``step`` (a repeat after a kill stores no second row)."""
        if not self._done("parent"):
            self._log_metrics(self.parent_id, metrics, step, stamp_key=f"parent@{step}")

    def _upper_bound_metrics(self) -> dict[str, float]:
        """Unparsed replies of the upper bound the run's memory scores are computed against (they count as
        wrong and so raise the memory score); nothing when the run has no upper-bound table."""
        path = self.run_dir / UPPER_BOUND_FILE
        if not path.exists():
            return {}
        table = UpperBoundTable.model_validate_json(path.read_text(encoding="utf-8"))
        return {"upper_bound_format_errors": table.format_errors,
                "upper_bound_format_error_rate": table.format_error_rate}

    def _stamp(self, stamp_key: str) -> int:
        """The timestamp of one batch of metric rows, fixed before its first write (see the module docstring)."""
        stamps = self.ids.setdefault("stamps", {})
        if stamp_key not in stamps:
            stamps[stamp_key] = int(time.time() * 1000)
            self._save_ids()
        return stamps[stamp_key]

    def _log_metrics(self, run_id: str, metrics: dict[str, float], step: int, *, stamp_key: str) -> None:
        stamp = self._stamp(stamp_key)
        batch = [Metric(_metric_key(name), float(value), stamp, step) for name, value in metrics.items()]
        for start in range(0, len(batch), 500):
            self.client.log_batch(run_id, metrics=batch[start : start + 500])

    def _registered_version(self, name: str, candidate_id: str) -> int | None:
        """The version of prompt ``name`` this evolution registered for ``candidate_id`` (a killed process may
        have registered it without noting it)."""
        if self.client.get_prompt(name) is None:
            return None
        for version in self.client.search_prompt_versions(name):
            tags = version.tags or {}
            if tags.get("candidate_id") == candidate_id and tags.get(RUN_TAG) == self.tracking_id:
                return int(version.version)
        return None

    @staticmethod
    def _register_prompt(name: str, text: str, candidate_id: str, tags: dict[str, str]) -> int:
        """A new version of prompt ``name``. MLflow creates the prompt when it finds none, then adds the version: two
        evolutions on a shared store registering a new prompt together can both find it missing, and the second
        create fails as already existing. Once more finds the other's prompt and only adds the version."""
        return _once_more_after_a_lost_race(
            lambda: int(mlflow.genai.register_prompt(name=name, template=text,
                                                     commit_message=f"candidate {candidate_id}", tags=tags).version),
            lambda error: error.error_code == "RESOURCE_ALREADY_EXISTS")

    def register_prompts(self, prefix: str, candidate_id: str, prompts: dict[str, str], *, best: bool,
                         tags: dict[str, str], run_id: str | None) -> None:
        """Put an accepted candidate's prompts in the Prompt Registry (once, with ``tags``), linked to the
        candidate's run; alias 'best' if it is."""
        registered = self.ids.setdefault("prompts", {})
        for component, text in sorted(prompts.items()):
            name = _prompt_name(f"{prefix}-{component}")
            key = f"{name}@{candidate_id}"
            if key not in registered:
                version = self._registered_version(name, candidate_id)
                if version is None:
                    version = self._register_prompt(name, text, candidate_id, tags | {RUN_TAG: self.tracking_id})
                registered[key] = version
                self._save_ids()
            if run_id is not None:  # linking again is a no-op
                self.client.link_prompt_version_to_run(run_id, f"prompts:/{name}/{registered[key]}")
            if best:
                mlflow.genai.set_prompt_alias(name, alias="best", version=registered[key])

    def finish(self, metrics: dict[str, float], artifacts: dict[str, str], *, step: int, tags: dict[str, str],
               best_run_id: str | None, figures: tuple[Path, ...] = ()) -> None:
        """Final metrics, tags and closing artifacts (texts, and figure files) on the parent run; the best
        candidate's run is tagged ``BEST_TAG``."""
        if self._done("parent"):
            return
        self._log_metrics(self.parent_id, metrics | self._upper_bound_metrics(), step=step,
                          stamp_key=f"parent@final{step}")
        for key, value in tags.items():
            self.client.set_tag(self.parent_id, key, value)
        if best_run_id is not None:
            self.client.set_tag(best_run_id, BEST_TAG, "true")
        self._log_texts(self.parent_id, artifacts)
        for figure in figures:
            self.client.log_artifact(self.parent_id, str(figure))
        self._finish("parent")


def _metric_key(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_\-. /]", "_", name)


def _once_more_after_a_lost_race(work: Callable[[], T], lost: Callable[[MlflowException], bool]) -> T:
    """``work``, and once more when it failed as ``lost`` says: another evolution on a shared store created the same
    row between MLflow's look for it and its insert, and the second try finds that row."""
    try:
        return work()
    except MlflowException as error:
        if not lost(error):
            raise
        return work()


def _prompt_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_\-.]", "-", name)
