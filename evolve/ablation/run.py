"""Runs an ablation: every (arm, seed) evolution into its own folder, then statistics, tables and plots.

Resumable: a finished (arm, seed) has an ``arm_result.json`` and is skipped; a started one is handed to
``run_evolution(resume=True)``. Tracking is the tracker's observer's job (``memevo.evolve.ablation.events``; the
tracker is the one the arms name, ``ablation_tracker``): the ablation emits its events and keeps, in its manifest
(``ablation.manifest``), what the observer notes to find its records again on a resume.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memevo.agents.llm.accounting import priced_dollars
from memevo.core.errors import UserInputError
from memevo.core.lazy_model import LazyModel
from memevo.environments.metrics.scores import Scores, UserScores
from memevo.evolve import runtime
from memevo.evolve.ablation.config import REPORT_ONLY_FIELDS, AblationConfig, resolve_all
from memevo.evolve.ablation.events import (
    AblationContext,
    AblationEnded,
    AblationObservers,
    AblationStarted,
    EvolutionFinished,
    SummaryReady,
)
from memevo.evolve.ablation.manifest import MANIFEST_FILE, AblationManifest, load_manifest
from memevo.evolve.ablation.records import (
    ArmSeedRecord,
    FailureRates,
    UnitScore,
    arm_seed_dir,
    find_arm_records,
    load_arm_record,
    save_arm_record,
)
from memevo.evolve.ablation.render import write_ablation_outputs
from memevo.evolve.ablation.summary import REPLICATE_NAMES, AblationSummary, summarize
from memevo.evolve.config import EvolveConfig, without_widths
from memevo.evolve.loop import EvolutionResult, run_evolution
from memevo.evolve.plugins import make_tracker

if TYPE_CHECKING:
    from memevo.evolve.observers.tracker import Tracker


class AblationOutcome(LazyModel):
    summary: AblationSummary
    outputs: dict[str, Path]
    parent_run_id: str | None


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


def _prepare(config: AblationConfig, run_dir: Path, resume: bool, default_store: str) -> AblationManifest:
    """Start a new manifest (its store: the config's, else ``default_store``), or on resume check the stored one
    describes the same ablation."""
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
            stored.save(run_dir)
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
        tracking_uri=config.tracking_uri or default_store,
        min_effect=config.min_effect,
    )
    manifest.save(run_dir)
    return manifest


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


def record_from_result(
    result: EvolutionResult, arm: str, seed: int, evolve_config: EvolveConfig, evolution_run_id: str | None
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
        evolution_run_id=evolution_run_id,
        best_policy_id=result.best.id,
        config=evolve_config.hash_payload(),
    )


def summary_metrics(summary: AblationSummary) -> dict[str, float]:
    """The parent run's metrics: per arm the objective's mean over seeds with its interval, the pooled memory score
    and spend; per comparison the test over seeds (p-values, seeds needed) and the conditional p-value over units.
    A figure that cannot be computed is left out, never logged as a number."""
    metrics: dict[str, float | int | None] = {}
    for arm in summary.arms:
        key = f"{arm.arm}.{summary.metric}"
        metrics |= {key: arm.mean.mean, f"{key}_ci_low": arm.mean.low, f"{key}_ci_high": arm.mean.high,
                    f"{arm.arm}.pooled_memory_score": arm.memory, f"{arm.arm}.calls": arm.spend.calls,
                    f"{arm.arm}.dollars": priced_dollars(arm.spend), f"{arm.arm}.unpriced_calls": arm.spend.unpriced_calls,
                    f"{arm.arm}.cancelled_calls": arm.spend.cancelled_calls}
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


def ablation_tracker(config: AblationConfig) -> tuple[str, Tracker]:
    """The tracker the arms' evolutions name (``tracking.tracker``), with its name: the ablation's run is in it, each
    evolution's nested under it, so the arms must name the same one."""
    names = sorted({arm_config.tracking.tracker for arm_config in resolve_all(config).values()})
    source = str(config.source or "ablation config")
    if len(names) > 1:
        raise UserInputError(f"the arms name different trackers ({', '.join(names)}); an ablation nests every arm's "
                             "runs under its own run, in one tracker", source=source, field="tracking.tracker")
    return names[0], make_tracker(names[0], source=source)


def start_ablation(config: AblationConfig, run_dir: Path, resume: bool) -> tuple[AblationManifest, AblationObservers]:
    """The manifest, made or checked, and the ablation's observers (its tracker's), told it started."""
    name, tracker = ablation_tracker(config)
    manifest = _prepare(config, run_dir, resume, tracker.ui().default_store(run_dir))
    observers = AblationObservers()
    observers.add(name, tracker.make_ablation_observer(AblationContext(manifest=manifest, run_dir=run_dir)))
    observers.notify(AblationStarted())
    return manifest, observers


def run_unit(arm: str, seed: int, evolve_config: EvolveConfig, *, manifest: AblationManifest, run_dir: Path,
             hub: runtime.Hub, observers: AblationObservers, progress: Callable[[str], None]) -> None:
    """Run, resume or skip one (arm, seed) evolution, then tell the observers it finished."""
    finished = load_arm_record(run_dir, arm, seed)
    if finished is not None:
        progress(f"[{arm} seed {seed}] finished earlier: skipped")
        observers.notify(EvolutionFinished(finished))  # a kill may have come before a tracker noted it
        return
    folder = arm_seed_dir(run_dir, arm, seed)
    started = folder.exists() and any(folder.iterdir())
    progress(f"[{arm} seed {seed}] {'resuming' if started else 'running'} evolution in {folder}")
    arm_config = _with_tracking(evolve_config, manifest)
    result = run_evolution(arm_config, run_dir=folder, hub=hub, resume=started)
    record = record_from_result(result, arm, seed, arm_config, observers.evolution_run(folder))
    save_arm_record(record, run_dir)
    observers.notify(EvolutionFinished(record))


def finish_ablation(observers: AblationObservers, manifest: AblationManifest, run_dir: Path) -> AblationOutcome:
    """Summarize every (arm, seed), render, and tell the observers (a tracker logs the summary and closes)."""
    outcome = render_ablation(run_dir, manifest)
    observers.notify(SummaryReady(outcome.summary, outcome.outputs))
    observers.notify(AblationEnded(succeeded=True))
    return outcome


def run_ablation(
    config: AblationConfig,
    *,
    run_dir: Path,
    hub: runtime.Hub,
    resume: bool = False,
    progress: Callable[[str], None] = print,
) -> AblationOutcome:
    """Run (or finish) every (arm, seed), then summarize and render; the observers track it."""
    resolved = resolve_all(config)
    manifest, observers = start_ablation(config, run_dir, resume)
    try:
        for (arm, seed), evolve_config in resolved.items():
            run_unit(arm, seed, evolve_config, manifest=manifest, run_dir=run_dir, hub=hub, observers=observers,
                     progress=progress)
        return finish_ablation(observers, manifest, run_dir)
    except BaseException:
        observers.notify(AblationEnded(succeeded=False))
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
