"""Turns stored (arm, seed) records into the ablation's statistics, over the unit that is replicated.

In memevo's outer loop all test users of a seed are scored with the one prompt that seed's evolution found,
so the effect of evolving has as many independent replicates as there are seeds: per seed the arm's mean
over its test users is one observation, arms are paired seed by seed, and intervals come from a
hierarchical bootstrap (seeds, then users within a seed), which carries both the spread between
evolutions and the sampling of users. Under AMemGym's protocol (``amemgym_period``) every user evolves its
own prompt, so there a (user, seed) unit is a replicate. The per-(user, seed) test of the outer loop is
kept as a secondary figure: it holds the evolved prompts fixed, so it says how sure we are about these
prompts on these users, not what evolving does.

The metric is the runs' objective (accuracy unless they decided on AMemGym's memory score).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from statistics import fmean, stdev
from typing import Literal

from pydantic import Field

from memevo.agents.llm.accounting import RoleUsage
from memevo.core.lazy_model import LazyModel
from memevo.environments.metrics.scores import Scores
from memevo.environments.registry import DEFAULT_ENVIRONMENT, capabilities_of
from memevo.environments.score_text import failure_cell
from memevo.evolve.ablation.config import DEFAULT_MIN_EFFECT
from memevo.evolve.ablation.records import ArmSeedRecord, FailureRates, UnitScore
from memevo.evolve.config import stored_objective
from memevo.evolve.stats import (
    CIMethod,
    Interval,
    PairedTest,
    SampleSize,
    fmt,
    hierarchical_bootstrap_ci,
    interval,
    na,
    paired_t_sample_size,
    paired_test,
)

Level = Literal["seed", "unit"]
REPLICATE_NAMES: dict[Level, str] = {"seed": "seed", "unit": "user"}
"""What one replicate is called in text ("seeds needed", "users needed")."""

NOT_STORED = "not in records written before test scores were kept"


class SeedResult(LazyModel):
    """One (arm, seed) evolution: the metric's mean over its test users, its memory score and failure split."""

    seed: int
    n_users: int = Field(description="Test users with a value of the metric.")
    n_missing: int = Field(0, description="Test users without one (their AMemGym memory score is n/a).")
    mean: float | None
    memory: float | None = Field(description="Pooled memory score over the seed's test users.")
    memory_na_reason: str | None = None
    failure: FailureRates | None = None
    failure_cell: str = Field(description="write / read / utilization shares, or n/a with the reason.")


class CategoryResult(LazyModel):
    """One benchmark category (LoCoMo's, LongMemEval's question types, MemoryAgentBench's sources, MemoryBench's
    datasets) of an arm's held-out test: the best candidate's score per seed, averaged over seeds."""

    category: str
    n_questions: int = Field(description="Test questions of the category, over the distinct seeds.")
    score: Interval = Field(description="Mean over seeds, bootstrap interval over seeds (the records keep the "
                            "category's score per seed, not per user, so users are not resampled within a seed).")


class ArmSummary(LazyModel):
    arm: str
    seeds: list[int]
    replicates: int = Field(description="Distinct seeds the intervals use (one when all seeds gave the same scores).")
    n_units: int = Field(description="(user, seed) units with a value, over the distinct seeds.")
    mean: Interval = Field(description="Mean over seeds of the per-seed means, hierarchical bootstrap interval.")
    conditional: Interval = Field(description="Over (user, seed) units, holding the evolved prompts fixed.")
    per_seed: list[SeedResult]
    period: list[Interval] = Field(description="The metric per period, as ``mean``.")
    memory: float | None = Field(description="Mean over seeds of the per-seed pooled memory scores.")
    memory_na_reason: str | None = None
    failure: FailureRates | None = Field(None, description="Question-weighted over seeds; None unless all seeds split.")
    failure_cell: str
    spend: RoleUsage = Field(description="All roles, summed over seeds.")
    identical_seeds: bool = False
    per_category: list[CategoryResult] = Field([], description="Empty when the environment reports no categories.")


class Comparison(LazyModel):
    """An arm against the baseline: the primary test over replicates and the secondary one over units."""

    arm: str
    baseline: str
    metric: str
    level: Level
    test: PairedTest = Field(description="Paired over replicates: seeds, or (user, seed) units for amemgym_period.")
    interval: Interval = Field(description="Hierarchical bootstrap of the mean difference (seeds, then users).")
    sd_diff: float | None = Field(description="SD of the per-replicate differences.")
    need_observed: SampleSize | None = Field(description="Replicates for 80% power at the observed difference.")
    need_minimal: SampleSize | None = Field(description="Replicates for 80% power at the ablation's min_effect.")
    need_note: str = Field("", description="Why no sample size can be planned (too few replicates).")
    conditional: PairedTest = Field(description="Paired over (user, seed) units, the evolved prompts held fixed.")


class AblationSummary(LazyModel):
    name: str
    environment: str = Field(DEFAULT_ENVIRONMENT, description="The environment the runs evolved on (summaries written "
                             "before environments were configurable: AMemGym, the only one then).")
    metric: str = Field(description="The runs' objective, which every figure but the memory score is of.")
    level: Level
    ci_method: CIMethod = Field(description="Interval method of the secondary figures over units.")
    confidence: float
    baseline: str
    min_effect: float
    arms: list[ArmSummary]
    comparisons: list[Comparison]
    notes: list[str] = []


def _metric(records: Sequence[ArmSeedRecord]) -> tuple[str, list[str]]:
    """The objective the runs decided on (a record written before the rename decided on AMemGym's ratio)."""
    objectives = sorted({str(stored_objective(record.config.get("objective", "accuracy"))) for record in records})
    if len(objectives) == 1:
        return objectives[0], []
    return "accuracy", [f"The arms decided on different objectives ({', '.join(objectives)}); all are compared "
                        "on accuracy."]


def _environment(records: Sequence[ArmSeedRecord]) -> str:
    """The environment of the runs ('+'-joined when arms differ)."""
    return "+".join(sorted({str(record.config.get("environment", DEFAULT_ENVIRONMENT)) for record in records}))


def _level(records: Sequence[ArmSeedRecord]) -> Level:
    """Units are replicates only when every run evolved per user (AMemGym's protocol)."""
    return "unit" if all(record.config.get("protocol") == "amemgym_period" for record in records) else "seed"


def _picks(metric: str) -> tuple[Callable[[UnitScore], float | None], Callable[[UnitScore], Sequence[float | None]]]:
    if metric == "accuracy":
        return (lambda unit: unit.overall), (lambda unit: unit.period_overall)
    return (lambda unit: unit.memory), (lambda unit: unit.period_memory)


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
    splits = [record.failure for record in records if record.failure is not None]
    if not splits or len(splits) < len(records):
        return None
    n = sum(split.n_questions for split in splits)
    if n == 0:
        return None
    pooled = {
        name: sum(getattr(split, name) * split.n_questions for split in splits) / n
        for name in ("write", "read", "util")
    }
    return FailureRates(**pooled, n_questions=n)


def _split_text(failure: FailureRates) -> str:
    return f"{fmt(failure.write)} / {fmt(failure.read)} / {fmt(failure.util)}"


def _not_amemgym(record: ArmSeedRecord) -> str | None:
    """Why the memory score and the failure split are absent on another environment (``Capabilities.memory_figures``): no
    setting would give them (an arm's seeds share their environment)."""
    environment = str(record.config.get("environment", DEFAULT_ENVIRONMENT))
    return None if capabilities_of(environment).memory_figures else f"AMemGym's figure; {environment} has none"


def _seed_failure_cell(record: ArmSeedRecord) -> str:
    """The evolution report's cell for these test scores (the split, or why there is none)."""
    if (reason := _not_amemgym(record)) is not None:
        return na(reason)
    if record.scores is None:
        return _split_text(record.failure) if record.failure is not None else na(NOT_STORED)
    return failure_cell(record.scores)


def _memory(scores: Scores | None) -> tuple[float | None, str | None]:
    if scores is None:
        return None, NOT_STORED
    if scores.pooled_memory_score is None:
        return None, scores.memory_na_reason or "undefined"
    return scores.pooled_memory_score, None


def _seed_result(record: ArmSeedRecord, pick: Callable[[UnitScore], float | None]) -> SeedResult:
    values = [value for value in map(pick, record.units) if value is not None]
    absent = _not_amemgym(record)
    memory, reason = (None, absent) if absent is not None else _memory(record.scores)
    return SeedResult(
        seed=record.seed, n_users=len(values), n_missing=len(record.units) - len(values),
        mean=fmean(values) if values else None, memory=memory, memory_na_reason=reason,
        failure=record.failure, failure_cell=_seed_failure_cell(record),
    )


def _arm_memory(per_seed: Sequence[SeedResult]) -> tuple[float | None, str | None]:
    """Mean of the seeds' pooled memory scores; n/a with the first seed's reason when any seed has none."""
    if all(result.memory is not None for result in per_seed):
        return fmean(result.memory for result in per_seed if result.memory is not None), None
    missing = next(result for result in per_seed if result.memory is None)
    return None, f"seed {missing.seed}: {missing.memory_na_reason}" if len(per_seed) > 1 else missing.memory_na_reason


def _arm_failure_cell(failure: FailureRates | None, per_seed: Sequence[SeedResult]) -> str:
    """The pooled split, or the first seed's reason for having none."""
    if failure is not None:
        return _split_text(failure)
    undivided = next(result for result in per_seed if result.failure is None)
    return undivided.failure_cell if len(per_seed) == 1 else f"{undivided.failure_cell} in seed {undivided.seed}"


def _at_period(pick: Callable[[UnitScore], Sequence[float | None]], period: int
               ) -> Callable[[UnitScore], float | None]:
    return lambda unit: pick(unit)[period] if period < len(pick(unit)) else None


def _groups(records: Sequence[ArmSeedRecord], pick: Callable[[UnitScore], float | None]) -> list[list[float]]:
    return [[value for unit in record.units if (value := pick(unit)) is not None] for record in records]


def category_results(records: Sequence[ArmSeedRecord], confidence: float) -> list[CategoryResult]:
    """Per category, in first-seen order, the seeds' scores as one-value groups of the headline's bootstrap:
    under two seeds its interval is n/a with the reason."""
    per_seed: dict[str, list[tuple[int, float]]] = {}
    for record in records:
        for category in record.scores.per_category if record.scores is not None else []:
            per_seed.setdefault(category.category, []).append((category.n_questions, category.accuracy))
    return [CategoryResult(category=name, n_questions=sum(n for n, _ in scored),
                           score=hierarchical_bootstrap_ci([[value] for _, value in scored], confidence,
                                                           group_name="seed"))
            for name, scored in per_seed.items()]


def _min_groups(level: Level) -> int:
    """At the seed level the spread between evolutions needs two seeds; at the unit level one seed's users do."""
    return 2 if level == "seed" else 1


def summarize_arm(arm: str, records: Sequence[ArmSeedRecord], *, metric: str, level: Level, method: CIMethod,
                  confidence: float) -> ArmSummary:
    """Per-seed results of every run; intervals over the distinct seeds; spend over every run."""
    pick, period_pick = _picks(metric)
    distinct = _distinct(records)
    groups = _groups(distinct, pick)
    per_seed = [_seed_result(record, pick) for record in sorted(records, key=lambda record: record.seed)]
    length = max((len(period_pick(unit)) for record in distinct for unit in record.units), default=0)
    period = [hierarchical_bootstrap_ci(_groups(distinct, _at_period(period_pick, p)), confidence,
                                        min_groups=_min_groups(level), group_name="seed") for p in range(length)]
    spend = RoleUsage()
    for record in records:
        spend = spend.plus(record.usage.total())
    failure = pooled_failure(records)
    absent = _not_amemgym(records[0])
    memory, memory_reason = (None, absent) if absent is not None else _arm_memory(per_seed)
    failure_text = na(absent) if absent is not None else _arm_failure_cell(failure, per_seed)
    return ArmSummary(
        arm=arm,
        seeds=[result.seed for result in per_seed],
        replicates=len(distinct),
        n_units=sum(map(len, groups)),
        mean=hierarchical_bootstrap_ci(groups, confidence, min_groups=_min_groups(level), group_name="seed"),
        conditional=interval([value for group in groups for value in group], method, confidence),
        per_seed=per_seed,
        period=period,
        memory=memory,
        memory_na_reason=memory_reason,
        failure=failure,
        failure_cell=failure_text,
        spend=spend,
        identical_seeds=_identical_seeds(records),
        per_category=category_results(distinct, confidence),
    )


def _by_unit(records: Sequence[ArmSeedRecord], pick: Callable[[UnitScore], float | None]
             ) -> dict[tuple[str, int], float]:
    return {(unit.user_id, unit.seed): value for record in records for unit in record.units
            if (value := pick(unit)) is not None}


def _seed_means(units: dict[tuple[str, int], float], matched: set[tuple[str, int]]) -> dict[int, float]:
    """Per seed the mean over the users both arms scored, so a seed's difference is over the same users."""
    seeds = sorted({seed for _, seed in matched})
    return {seed: fmean(value for key, value in units.items() if key in matched and key[1] == seed) for seed in seeds}


def _sample_sizes(test: PairedTest, diffs: Sequence[float], level: Level, min_effect: float
                  ) -> tuple[float | None, SampleSize | None, SampleSize | None, str]:
    """Replicates needed for 80% power, from the observed SD of the per-replicate differences."""
    name = REPLICATE_NAMES[level]
    if len(diffs) < 2:
        return None, None, None, f"{len(diffs)} {name if len(diffs) == 1 else name + 's'}: no SD between {name}s"
    sd = stdev(diffs)
    observed = paired_t_sample_size(test.mean_diff, sd) if test.mean_diff is not None else None
    return sd, observed, paired_t_sample_size(min_effect, sd), ""


def _note(*parts: str) -> str:
    return "; ".join(part for part in parts if part)


def compare(arm: str, records: Sequence[ArmSeedRecord], base: str, base_records: Sequence[ArmSeedRecord], *,
            metric: str, level: Level, confidence: float, min_effect: float) -> Comparison:
    """Arm minus baseline, paired over replicates (primary) and over (user, seed) units (conditional). When both
    arms repeated themselves across seeds, one seed only: a copy is no replicate."""
    both_copies = len(records) > 1 and len(_distinct(records)) == 1 == len(_distinct(base_records))
    copies_note = ""
    if both_copies:
        first = min(record.seed for record in records)
        records = [record for record in records if record.seed == first]
        base_records = [record for record in base_records if record.seed == first]
        copies_note = f"every seed gave identical scores in both arms: seed {first} only"
    pick, _ = _picks(metric)
    base_units, arm_units = _by_unit(base_records, pick), _by_unit(records, pick)
    conditional = paired_test(base_units, arm_units, confidence)
    matched = set(base_units) & set(arm_units)
    by_seed: dict[int, list[float]] = {}
    for user, seed in sorted(matched):
        by_seed.setdefault(seed, []).append(arm_units[(user, seed)] - base_units[(user, seed)])
    if level == "seed":
        base_means, arm_means = _seed_means(base_units, matched), _seed_means(arm_units, matched)
        test = paired_test(base_means, arm_means, confidence)
        diffs = [arm_means[seed] - base_means[seed] for seed in base_means]
    else:
        test = conditional
        diffs = [value for values in by_seed.values() for value in values]
    sd, observed, minimal, need_note = _sample_sizes(test, diffs, level, min_effect)
    return Comparison(
        arm=arm, baseline=base, metric=metric, level=level,
        test=test.model_copy(update={"note": _note(test.note, copies_note)}),
        interval=hierarchical_bootstrap_ci(list(by_seed.values()), confidence, min_groups=_min_groups(level),
                                           group_name="seed"),
        sd_diff=sd, need_observed=observed, need_minimal=minimal, need_note=need_note,
        conditional=conditional.model_copy(update={"note": _note(conditional.note, copies_note)}),
    )


def summarize(
    name: str,
    records: Sequence[ArmSeedRecord],
    arm_order: Sequence[str],
    *,
    baseline: str | None = None,
    ci_method: CIMethod = "t",
    confidence: float = 0.95,
    min_effect: float = DEFAULT_MIN_EFFECT,
) -> AblationSummary:
    """Per-arm summaries in ``arm_order`` and each other arm tested against ``baseline`` (default: the first)."""
    grouped = {arm: [record for record in records if record.arm == arm] for arm in arm_order}
    present = [arm for arm in arm_order if grouped[arm]]
    if not present:
        raise ValueError("no finished (arm, seed) records to summarize")
    metric, notes = _metric(records)
    level = _level(records)
    base = baseline if baseline in present else present[0]
    comparisons = [
        compare(arm, grouped[arm], base, grouped[base], metric=metric, level=level, confidence=confidence,
                min_effect=min_effect)
        for arm in present
        if arm != base
    ]
    return AblationSummary(
        name=name,
        environment=_environment(records),
        metric=metric,
        level=level,
        ci_method=ci_method,
        confidence=confidence,
        baseline=base,
        min_effect=min_effect,
        arms=[summarize_arm(arm, grouped[arm], metric=metric, level=level, method=ci_method, confidence=confidence)
              for arm in present],
        comparisons=comparisons,
        notes=notes,
    )
