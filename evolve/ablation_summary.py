"""Turns stored per-(user, seed) unit scores into per-arm intervals, per-period curves and paired tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic import Field

from memevo.agents.lazy_model import LazyModel
from memevo.agents.llm.accounting import RoleUsage
from memevo.evolve.ablation_records import ArmSeedRecord, FailureRates, UnitScore
from memevo.evolve.stats import CIMethod, Interval, PairedTest, interval, paired_test

METRICS: dict[str, Callable[[UnitScore], float | None]] = {
    "memory": lambda unit: unit.memory,
    "overall": lambda unit: unit.overall,
}


class ArmSummary(LazyModel):
    arm: str
    seeds: list[int]
    n_units: int = Field(description="Units the intervals use (one seed's when all seeds were identical).")
    metrics: dict[str, Interval]
    period_memory: list[Interval]
    period_overall: list[Interval]
    failure: FailureRates | None = Field(None, description="Question-weighted over seeds; None unless every seed diagnosed.")
    spend: RoleUsage = Field(description="All roles, summed over seeds.")
    identical_seeds: bool = False


class Comparison(LazyModel):
    arm: str
    baseline: str
    metric: str
    test: PairedTest


class AblationSummary(LazyModel):
    name: str
    ci_method: CIMethod
    confidence: float
    baseline: str
    arms: list[ArmSummary]
    comparisons: list[Comparison]


def _values(units: Sequence[UnitScore], metric: Callable[[UnitScore], float | None]) -> list[float]:
    return [value for value in map(metric, units) if value is not None]


def _period_curve(
    units: Sequence[UnitScore], pick: Callable[[UnitScore], list], method: CIMethod, confidence: float
) -> list[Interval]:
    length = max((len(pick(unit)) for unit in units), default=0)
    return [
        interval([value for unit in units if p < len(pick(unit)) and (value := pick(unit)[p]) is not None], method, confidence)
        for p in range(length)
    ]


def _identical_seeds(records: Sequence[ArmSeedRecord]) -> bool:
    """True when several seeds produced exactly the same scores: the replicates add no information."""
    if len(records) < 2:
        return False
    signature = [sorted((u.user_id, u.memory, u.overall) for u in record.units) for record in records]
    return all(item == signature[0] for item in signature[1:])


def _distinct(records: Sequence[ArmSeedRecord]) -> list[ArmSeedRecord]:
    """The records that carry information: one seed when all seeds are copies, so n is not inflated."""
    ordered = sorted(records, key=lambda record: record.seed)
    return ordered[:1] if _identical_seeds(ordered) else ordered


def pooled_failure(records: Sequence[ArmSeedRecord]) -> FailureRates | None:
    """Failure shares pooled over runs, weighted by questions asked (the split is per run, not per user)."""
    splits = [record.failure for record in records]
    if not splits or any(split is None for split in splits):
        return None
    n = sum(split.n_questions for split in splits)  # type: ignore[union-attr]
    if n == 0:
        return None
    pooled = {
        name: sum(getattr(split, name) * split.n_questions for split in splits) / n  # type: ignore[union-attr]
        for name in ("write", "read", "util")
    }
    return FailureRates(**pooled, n_questions=n)


def summarize_arm(arm: str, records: Sequence[ArmSeedRecord], method: CIMethod, confidence: float) -> ArmSummary:
    """Intervals over the distinct (user, seed) units; spend over every run."""
    units = [unit for record in _distinct(records) for unit in record.units]
    spend = RoleUsage()
    for record in records:
        spend = spend.plus(record.usage.total())
    return ArmSummary(
        arm=arm,
        seeds=sorted(record.seed for record in records),
        n_units=len(units),
        metrics={name: interval(_values(units, pick), method, confidence) for name, pick in METRICS.items()},
        period_memory=_period_curve(units, lambda unit: unit.period_memory, method, confidence),
        period_overall=_period_curve(units, lambda unit: unit.period_overall, method, confidence),
        failure=pooled_failure(records),
        spend=spend,
        identical_seeds=_identical_seeds(records),
    )


def _by_unit(records: Sequence[ArmSeedRecord], metric: str) -> dict[tuple[str, int], float]:
    pick = METRICS[metric]
    return {
        (unit.user_id, unit.seed): value
        for record in records
        for unit in record.units
        if (value := pick(unit)) is not None
    }


def _compare(
    arm: str, records: Sequence[ArmSeedRecord], base: str, base_records: Sequence[ArmSeedRecord], metric: str,
    confidence: float,
) -> Comparison:
    """Paired test over (user, seed); when both arms repeated themselves across seeds, over one seed only
    (otherwise every difference would be counted once per seed and the p-value would shrink for nothing)."""
    both_copies = len(_distinct(records)) == 1 == len(_distinct(base_records)) and len(records) > 1
    if both_copies:
        first = min(record.seed for record in records)
        records = [record for record in records if record.seed == first]
        base_records = [record for record in base_records if record.seed == first]
    test = paired_test(_by_unit(base_records, metric), _by_unit(records, metric), confidence)
    if both_copies:
        note = f"seeds gave identical results in both arms: seed {first} only"
        test = test.model_copy(update={"note": "; ".join(part for part in (test.note, note) if part)})
    return Comparison(arm=arm, baseline=base, metric=metric, test=test)


def summarize(
    name: str,
    records: Sequence[ArmSeedRecord],
    arm_order: Sequence[str],
    *,
    baseline: str | None = None,
    ci_method: CIMethod = "t",
    confidence: float = 0.95,
) -> AblationSummary:
    """Per-arm summaries in ``arm_order`` and each other arm tested against ``baseline`` (default: the first)."""
    grouped = {arm: [record for record in records if record.arm == arm] for arm in arm_order}
    present = [arm for arm in arm_order if grouped[arm]]
    if not present:
        raise ValueError("no finished (arm, seed) records to summarize")
    base = baseline if baseline in present else present[0]
    comparisons = [
        _compare(arm, grouped[arm], base, grouped[base], metric, confidence)
        for arm in present
        if arm != base
        for metric in METRICS
    ]
    return AblationSummary(
        name=name,
        ci_method=ci_method,
        confidence=confidence,
        baseline=base,
        arms=[summarize_arm(arm, grouped[arm], ci_method, confidence) for arm in present],
        comparisons=comparisons,
    )
