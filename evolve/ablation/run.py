"""Runs an ablation: every (arm, seed) evolution into its own folder, then statistics, tables, plots, MLflow.

Resumable: a finished (arm, seed) has an ``arm_result.json`` and is skipped; a started one is handed to
``run_evolution(resume=True)``. The ablation's own MLflow parent run is created once, tagged with the hash of
the manifest, and found by that tag on resume (also when a kill came before its id was saved); each
evolution's MLflow run is attached to it as a child (``mlflow.parentRunId``) after it finishes. The summary's
metric rows carry a timestamp saved before their first write, so a repeat after a kill adds no row.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mlflow.entities import Metric
from mlflow.tracking import MlflowClient

from memevo.agents.llm.accounting import priced_dollars
from memevo.core.atomic_files import write_json_atomic
from memevo.core.errors import UserInputError
from memevo.core.lazy_model import LazyModel
from memevo.core.run_files import delete_and_resume, read_json, read_model
from memevo.environments.metrics.scores import Scores, UserScores
from memevo.evolve import runtime
from memevo.evolve.ablation.config import DEFAULT_MIN_EFFECT, REPORT_ONLY_FIELDS, AblationConfig, resolve_all
from memevo.evolve.ablation.records import (
    ArmSeedRecord,
    FailureRates,
    UnitScore,
    arm_seed_dir,
    find_arm_records,
    load_arm_record,
    save_arm_record,
)
from memevo.evolve.ablation.render import arm_table, write_ablation_outputs
from memevo.evolve.ablation.summary import REPLICATE_NAMES, AblationSummary, summarize
from memevo.evolve.config import EvolveConfig, without_widths
from memevo.evolve.loop import EvolutionResult, run_evolution
from memevo.evolve.tracking.ablation_pages import ablation_note
from memevo.evolve.tracking.store import (
    MLFLOW_IDS_FILE,
    PARENT_TAG,
    default_tracking_uri,
    find_run,
    retire_default_experiment,
)

MANIFEST_FILE = "ablation.json"
MANIFEST_TAG = "memevo.ablation_manifest"
"""The ablation parent run's tag: the hash of the manifest as first written."""


class AblationManifest(LazyModel):
    """What ``memevo report`` needs to re-render an ablation, and what resume checks against."""

    name: str
    arms: list[str]
    seeds: list[int]
    baseline: str
    ci_method: str
    confidence: float
    config: dict
    tracking_uri: str
    parent_run_id: str | None = None
    summary_stamp: int | None = None
    """Timestamp of the summary's metric rows, saved before their first write."""
    min_effect: float = DEFAULT_MIN_EFFECT
    """The difference the report plans seeds for; the latest config's (absent from manifests written before it)."""

    def digest(self) -> str:
        """What identifies this ablation in the store (not the ids and stamps noted as it runs, nor what only the
        report uses)."""
        payload = self.model_dump(mode="json", exclude={"parent_run_id", "summary_stamp", *REPORT_ONLY_FIELDS})
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


class AblationOutcome(LazyModel):
    summary: AblationSummary
    outputs: dict[str, Path]
    parent_run_id: str | None


def load_manifest(run_dir: Path) -> AblationManifest | None:
    remedy = delete_and_resume("it", "it is written again from the config; the summary's MLflow metrics are then "
                               "logged once more, at a new time")
    return read_model(run_dir / MANIFEST_FILE, AblationManifest, remedy=remedy)


def _save_manifest(manifest: AblationManifest, run_dir: Path) -> None:
    write_json_atomic(run_dir / MANIFEST_FILE, manifest.model_dump(mode="json"))


def _identity(dump: dict[str, Any]) -> dict[str, Any]:
    """An ablation config dump as resume compares it: its arms' width overrides (requests, users and
    candidates at once) may change, as an evolve run's may, and so may what only the report uses."""
    copy = {key: value for key, value in json.loads(json.dumps(dump)).items() if key not in REPORT_ONLY_FIELDS}
    for arm in copy.get("arms", []):
        arm["overrides"] = _without_empty(without_widths(arm.get("overrides") or {}))
    return copy


def _without_empty(overrides: dict[str, Any]) -> dict[str, Any]:
    """Overrides without the mappings that held only widths (``episode: {}`` overrides nothing)."""
    kept = {key: _without_empty(value) if isinstance(value, dict) else value for key, value in overrides.items()}
    return {key: value for key, value in kept.items() if value != {}}


def _prepare(config: AblationConfig, run_dir: Path, resume: bool) -> AblationManifest:
    """Start a new manifest, or on resume check the stored one describes the same ablation."""
    stored = load_manifest(run_dir)
    dump = config.model_dump(mode="json")
    if stored is not None and not resume:
        raise UserInputError(
            "this folder already holds an ablation; pass --resume to continue it or choose another --run-dir",
            source=str(run_dir),
        )
    if stored is not None:
        now, then = _identity(dump), _identity(stored.config)
        changed = sorted(key for key in set(now) | set(then) if now.get(key) != then.get(key))
        if changed:
            raise UserInputError(
                "the config changed since this ablation started; resume needs the same config", source=str(run_dir), field=changed[0]
            )
        if stored.min_effect != config.min_effect:
            stored.min_effect = config.min_effect
            _save_manifest(stored, run_dir)
        return stored
    run_dir.mkdir(parents=True, exist_ok=True)
    manifest = AblationManifest(
        name=config.name,
        arms=config.arm_names,
        seeds=list(config.seeds),
        baseline=config.baseline_arm,
        ci_method=config.ci_method,
        confidence=config.confidence,
        config=dump,
        tracking_uri=config.tracking_uri or default_tracking_uri(run_dir),
        min_effect=config.min_effect,
    )
    _save_manifest(manifest, run_dir)
    return manifest


def _parent_run(client: MlflowClient, manifest: AblationManifest, run_dir: Path) -> str:
    """The ablation's MLflow run: created on first start, found by its manifest tag on resume, with its params
    (logging the same param again is a no-op)."""
    if manifest.parent_run_id is not None:
        client.update_run(manifest.parent_run_id, status="RUNNING")
        return manifest.parent_run_id
    experiment = client.get_experiment_by_name(manifest.name)
    if experiment is not None:
        experiment_id = experiment.experiment_id
    else:
        local = manifest.tracking_uri.startswith("sqlite")
        location = (run_dir / "mlartifacts").resolve().as_uri() if local else None
        experiment_id = client.create_experiment(manifest.name, artifact_location=location)
    if manifest.tracking_uri == default_tracking_uri(run_dir):
        retire_default_experiment(client)
    run_id = find_run(client, experiment_id, MANIFEST_TAG, manifest.digest())
    if run_id is None:
        tags = {"memevo.kind": "ablation", MANIFEST_TAG: manifest.digest()}
        run_id = client.create_run(experiment_id, run_name=f"ablation-{manifest.name}", tags=tags).info.run_id
    else:
        client.update_run(run_id, status="RUNNING")
    for key in ("arms", "seeds", "baseline", "ci_method", "confidence"):
        client.log_param(run_id, key, getattr(manifest, key))
    client.log_param(run_id, "run_dir", str(run_dir.resolve()))
    manifest.parent_run_id = run_id
    _save_manifest(manifest, run_dir)
    return run_id


def _with_tracking(evolve_config: EvolveConfig, manifest: AblationManifest) -> EvolveConfig:
    """Every arm logs to the ablation's store and experiment, so its runs can nest under the parent."""
    tracking = evolve_config.tracking.model_copy(update={"uri": manifest.tracking_uri, "experiment": manifest.name})
    return evolve_config.model_copy(update={"tracking": tracking})


def _units(user_scores: list[UserScores], arm: str, seed: int) -> list[UnitScore]:
    return [
        UnitScore(
            arm=arm,
            seed=seed,
            user_id=user.user_id,
            memory=user.memory_score,
            overall=user.accuracy,
            period_memory=user.per_period_memory,
            period_overall=user.per_period_accuracy,
        )
        for user in user_scores
    ]


def _failure(scores: Scores) -> FailureRates | None:
    split = scores.failure
    if split is None or split.n_questions == 0:
        return None
    return FailureRates(write=split.write, read=split.read, util=split.utilization, n_questions=split.n_questions)


def _evolution_run_id(folder: Path) -> str | None:
    """The evolution's MLflow parent run, as its tracker recorded it (None when tracking was off)."""
    ids_path = folder / MLFLOW_IDS_FILE
    if not ids_path.exists():
        return None
    ids = read_json(ids_path, remedy=delete_and_resume("it", "this arm's evolution is then not nested under the "
                                                                  "ablation's run"))
    parent = ids.get("parent") if isinstance(ids, dict) else None
    return parent.get("id") if isinstance(parent, dict) else None


def record_from_result(
    result: EvolutionResult, arm: str, seed: int, evolve_config: EvolveConfig, folder: Path
) -> ArmSeedRecord:
    """The engine's result reduced to what the ablation's statistics and reports need."""
    return ArmSeedRecord(
        arm=arm,
        seed=seed,
        units=_units(result.best_user_scores, arm, seed),
        seed_units=_units(result.seed_user_scores, arm, seed),
        failure=_failure(result.best_scores),
        scores=result.best_scores,
        usage=result.usage,
        evolution_run_id=_evolution_run_id(folder),
        best_policy_id=result.best.id,
        config=evolve_config.hash_payload(),
    )


def summary_metrics(summary: AblationSummary) -> dict[str, float]:
    """The parent run's metrics: per arm the objective's mean over seeds with its interval, the memory score and
    spend; per comparison the test over seeds (p-values, seeds needed) and the conditional p-value over units.
    A figure that cannot be computed is left out, never logged as a number."""
    metrics: dict[str, float | int | None] = {}
    for arm in summary.arms:
        key = f"{arm.arm}.{summary.metric}"
        metrics |= {key: arm.mean.mean, f"{key}_ci_low": arm.mean.low, f"{key}_ci_high": arm.mean.high,
                    f"{arm.arm}.memory_score": arm.memory, f"{arm.arm}.calls": arm.spend.calls,
                    f"{arm.arm}.dollars": priced_dollars(arm.spend), f"{arm.arm}.unpriced_calls": arm.spend.unpriced_calls}
    for c in summary.comparisons:
        key = f"{c.arm}.{c.metric}"
        name = REPLICATE_NAMES[c.level]
        metrics |= {
            f"{key}.mean_diff": c.interval.mean, f"{key}.paired_t_p": c.test.t_p,
            f"{key}.wilcoxon_p": c.test.wilcoxon_p,
            f"{key}.{name}s_for_80pct_power": c.need_observed.n if c.need_observed else None,
            f"{key}.{name}s_for_80pct_power_at_min_effect": c.need_minimal.n if c.need_minimal else None,
            f"{key}.conditional_paired_t_p": c.conditional.t_p,
        }
    return {name: float(value) for name, value in metrics.items() if value is not None}


def _log_summary(client: MlflowClient, run_id: str, manifest: AblationManifest, run_dir: Path,
                 summary: AblationSummary, outputs: dict[str, Path]) -> None:
    if manifest.summary_stamp is None:
        manifest.summary_stamp = int(time.time() * 1000)
        _save_manifest(manifest, run_dir)
    rows = [Metric(name, float(value), manifest.summary_stamp, 0) for name, value in summary_metrics(summary).items()]
    client.log_batch(run_id, metrics=rows)
    client.set_tag(run_id, "memevo.environment", summary.environment)  # a tag: the summary is logged again on resume
    for name, value in ablation_note(summary, arm_table(summary)).items():
        client.set_tag(run_id, name, value)
    for path in outputs.values():
        client.log_artifact(run_id, str(path))


def _attach(client: MlflowClient, parent_id: str, record: ArmSeedRecord) -> None:
    """Nest an (arm, seed)'s evolution run under the ablation's run (tags: repeating them is a no-op)."""
    if record.evolution_run_id:
        client.set_tag(record.evolution_run_id, PARENT_TAG, parent_id)
        client.set_tag(parent_id, f"evolution_run.{record.arm}.seed-{record.seed}", record.evolution_run_id)


def start_ablation(config: AblationConfig, run_dir: Path, resume: bool) -> tuple[AblationManifest, MlflowClient, str]:
    """The manifest, the MLflow client on its store and the parent run's id, made or found."""
    manifest = _prepare(config, run_dir, resume)
    client = MlflowClient(tracking_uri=manifest.tracking_uri)
    return manifest, client, _parent_run(client, manifest, run_dir)


def run_unit(arm: str, seed: int, evolve_config: EvolveConfig, *, manifest: AblationManifest, run_dir: Path,
             hub: runtime.Hub, client: MlflowClient, parent_id: str, progress: Callable[[str], None]) -> None:
    """Run, resume or skip one (arm, seed) evolution and nest its run under the parent."""
    finished = load_arm_record(run_dir, arm, seed)
    if finished is not None:
        progress(f"[{arm} seed {seed}] finished earlier: skipped")
        _attach(client, parent_id, finished)  # a kill may have come before its tags
        return
    folder = arm_seed_dir(run_dir, arm, seed)
    started = folder.exists() and any(folder.iterdir())
    progress(f"[{arm} seed {seed}] {'resuming' if started else 'running'} evolution in {folder}")
    arm_config = _with_tracking(evolve_config, manifest)
    result = run_evolution(arm_config, run_dir=folder, hub=hub, resume=started)
    record = record_from_result(result, arm, seed, arm_config, folder)
    save_arm_record(record, run_dir)
    _attach(client, parent_id, record)


def finish_ablation(client: MlflowClient, parent_id: str, manifest: AblationManifest, run_dir: Path) -> AblationOutcome:
    """Summarize every (arm, seed), render, log to the parent run and close it."""
    outcome = render_ablation(run_dir, manifest)
    _log_summary(client, parent_id, manifest, run_dir, outcome.summary, outcome.outputs)
    client.set_terminated(parent_id, status="FINISHED")
    return outcome


def run_ablation(
    config: AblationConfig,
    *,
    run_dir: Path,
    hub: runtime.Hub,
    resume: bool = False,
    progress: Callable[[str], None] = print,
) -> AblationOutcome:
    """Run (or finish) every (arm, seed), then summarize, render and log to one MLflow parent run."""
    resolved = resolve_all(config)
    manifest, client, parent_id = start_ablation(config, run_dir, resume)
    try:
        for (arm, seed), evolve_config in resolved.items():
            run_unit(arm, seed, evolve_config, manifest=manifest, run_dir=run_dir, hub=hub, client=client,
                     parent_id=parent_id, progress=progress)
        return finish_ablation(client, parent_id, manifest, run_dir)
    except BaseException:
        client.set_terminated(parent_id, status="FAILED")
        raise


def render_ablation(run_dir: Path, manifest: AblationManifest | None = None) -> AblationOutcome:
    """Summaries and output files from the stored records alone (used by ``run_ablation`` and ``memevo report``)."""
    manifest = manifest or load_manifest(run_dir)
    if manifest is None:
        raise UserInputError(f"no {MANIFEST_FILE} here: not an ablation folder", source=str(run_dir))
    records = find_arm_records(run_dir)
    if not records:
        raise UserInputError("no finished (arm, seed) yet: nothing to report", source=str(run_dir))
    summary = summarize(
        manifest.name,
        records,
        manifest.arms,
        baseline=manifest.baseline,
        ci_method=manifest.ci_method,  # type: ignore[arg-type]
        confidence=manifest.confidence,
        min_effect=manifest.min_effect,
    )
    outputs = write_ablation_outputs(summary, records, run_dir)
    return AblationOutcome(summary=summary, outputs=outputs, parent_run_id=manifest.parent_run_id)
