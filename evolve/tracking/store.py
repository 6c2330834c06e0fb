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

import io
import json
import re
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import mlflow
from mlflow import MlflowClient
from mlflow.entities import DatasetInput, Metric, Param
from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID

from memevo.environments.metrics import UPPER_BOUND_FILE, UpperBoundTable
from memevo.environments.store import write_json_atomic
from memevo.evolve.tracking.payloads import BEST_TAG
from memevo.evolve.tracking.stores import experiment_id, open_tracking_store

PARENT_TAG = MLFLOW_PARENT_RUN_ID
DEFAULT_EXPERIMENT_ID = "0"
KEY_TAG = "memevo.key"
"""The tag a run is found by on resume: ``<tracking id of the run folder>/<role key>``."""
RUN_TAG = "memevo.tracking_id"
"""The tag of a prompt version naming the evolution (its tracking id) that registered it."""
MLFLOW_IDS_FILE = "mlflow_ids.json"
"""Where a run folder keeps its MLflow run ids (read back by the ablation to find each arm's runs)."""


def default_tracking_uri(run_dir: Path) -> str:
    return f"sqlite:///{(run_dir / 'mlflow.db').resolve()}"


def git_commit(cwd: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=5, check=False
        )
    except OSError:
        return None
    return (out.stdout.strip() or None) if out.returncode == 0 else None


def retire_default_experiment(client: MlflowClient) -> None:
    """Delete (hide) the empty "Default" experiment MLflow's SQLite store creates with its tables; only called
    for a store memevo made for this run, never for one a user configured."""
    default = client.get_experiment(DEFAULT_EXPERIMENT_ID)
    if default.lifecycle_stage == "active" and not client.search_runs([DEFAULT_EXPERIMENT_ID], max_results=1):
        client.delete_experiment(DEFAULT_EXPERIMENT_ID)


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
        self.ids: dict[str, Any] = json.loads(self.ids_path.read_text()) if self.ids_path.exists() else {}
        if "tracking_id" not in self.ids:  # saved before any run exists: every key tag of this folder uses it
            self.ids["tracking_id"] = uuid.uuid4().hex[:16]
            self._save_ids()
        mlflow.set_tracking_uri(self.uri)
        self.client = open_tracking_store(self.uri)
        if uri is None:
            retire_default_experiment(self.client)
        location = (run_dir / "mlartifacts").resolve().as_uri() if self.uri.startswith("sqlite") else None
        self.experiment_id = experiment_id(self.client, self.uri, experiment, artifact_location=location,
                                           tags=experiment_tags)
        # registered prompt versions are linked to the active experiment: this one, not "Default"
        mlflow.set_experiment(experiment_id=self.experiment_id)

    @property
    def tracking_id(self) -> str:
        return self.ids["tracking_id"]

    def _save_ids(self) -> None:
        write_json_atomic(self.ids_path, self.ids)

    def _run(self, key: str, name: str, parent: str | None, tags: dict[str, str] | None = None) -> str:
        """The run for ``key``: noted, else found by its key tag (created by a killed process), else created."""
        entry = self.ids.get(key)
        if entry:
            return entry["id"]
        key_tag = f"{self.tracking_id}/{key}"
        run_id = find_run(self.client, self.experiment_id, KEY_TAG, key_tag)
        if run_id is None:
            run_tags = (tags or {}) | ({PARENT_TAG: parent} if parent else {}) | {KEY_TAG: key_tag}
            run_id = self.client.create_run(self.experiment_id, run_name=name, tags=run_tags).info.run_id
        self.ids[key] = {"id": run_id, "done": False}
        self._save_ids()
        return run_id

    def _done(self, key: str) -> bool:
        return bool(self.ids.get(key, {}).get("done"))

    def _finish(self, key: str) -> None:
        self.client.set_terminated(self.ids[key]["id"])
        self.ids[key]["done"] = True
        self._save_ids()

    @property
    def parent_id(self) -> str:
        return self.ids["parent"]["id"]

    def start(self, name: str, params: dict[str, Any], config_payload: dict[str, Any],
              dataset: DatasetInput | None = None) -> None:
        """Open (or reopen) the parent run and record what defines this evolution (``dataset``: its user split)."""
        run_id = self._run("parent", name, None)
        if not self.ids["parent"].get("params_logged"):
            flat = {key: str(value)[:500] for key, value in params.items()}
            self.client.log_batch(run_id, params=[Param(k, v) for k, v in sorted(flat.items())])
            self.client.log_dict(run_id, config_payload, "config.json")
            if dataset is not None:
                self.client.log_inputs(run_id, [dataset])
            self.ids["parent"]["params_logged"] = True
            self._save_ids()

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
        path -> text) and optionally ``tags``. ``metrics`` go on the generation run and the parent.
        """
        key = f"gen{generation}"
        gen_run = self._run(key, run_name or f"generation-{generation}", self.parent_id, tags)
        if self._done(key):
            return
        upper_bound = self._upper_bound_metrics()
        for entry in candidates:
            cand_key = f"{key}/{entry['label']}"
            cand_run = self._run(cand_key, entry["label"], gen_run, entry.get("tags"))
            if self._done(cand_key):
                continue
            self._log_metrics(cand_run, entry["metrics"] | upper_bound, generation, stamp_key=cand_key)
            params = {k: str(v)[:500] for k, v in entry["params"].items()}
            self.client.log_batch(cand_run, params=[Param(k, v) for k, v in sorted(params.items())])
            self._log_texts(cand_run, entry["artifacts"])
            self._finish(cand_key)
        self._log_metrics(gen_run, metrics, generation, stamp_key=key)
        self._log_metrics(self.parent_id, metrics, generation, stamp_key=f"parent@{generation}")
        self._finish(key)

    def update_candidate(self, generation: int, label: str, metrics: dict[str, float], artifacts: dict[str, str], *,
                         key: str) -> None:
        """What a candidate measured after its generation was logged (a parent completing its train users), on the
        candidate's own run: metrics at its generation's step, like the rest of its scores, and artifacts replacing
        the ones at the same paths. Repeatable: a repeat under the same ``key`` stores no second metric row, and an
        artifact written again replaces its file."""
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
                    version = int(mlflow.genai.register_prompt(
                        name=name, template=text, commit_message=f"candidate {candidate_id}",
                        tags=tags | {RUN_TAG: self.tracking_id},
                    ).version)
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


def _prompt_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_\-.]", "-", name)


def table_csv(rows: list[dict[str, Any]]) -> str:
    """Rows of dicts as CSV text (header from the first row)."""
    import csv

    if not rows:
        return ""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()
