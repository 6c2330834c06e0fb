"""Honest summary statistics for experiments: confidence intervals, paired tests and sample sizes.

Why these choices:
- Arms are compared pair by pair on the same units, which removes the (large) between-unit variance.
  Which unit is independent is the caller's choice: an evolution whose prompt all its test users share
  is replicated once per seed, not once per user (see ``ablation_summary``).
- Student-t intervals (``mean_ci``) and a seeded percentile bootstrap (``bootstrap_ci``) over flat
  values; ``hierarchical_bootstrap_ci`` for values nested in groups (users within seeds), resampling the
  groups and then the values inside each drawn group, so both sources of variance reach the interval.
- ``paired_t_sample_size``: how many pairs a paired t-test needs to detect an effect, from an SD.
- Where a statistic is undefined (too few units, zero variance, all differences zero) the value is
  ``None`` with a reason, and renders as "n/a (reason)", never as a made-up number.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Literal, TypeVar

import numpy as np
from scipy import stats as scipy_stats

from memevo.core.lazy_model import LazyModel
from memevo.evolve.weighting import weighted_contributions

CIMethod = Literal["t", "bootstrap"]
IntervalMethod = Literal["t", "bootstrap", "hierarchical_bootstrap"]
NA = "n/a"
BOOTSTRAP_RESAMPLES = 10_000
ROUNDING = 1e-12
"""Relative spread below which values count as equal (float rounding, not variance)."""


class Interval(LazyModel):
    """A mean with its confidence interval; ``low``/``high`` are None when the interval is undefined."""

    mean: float | None
    low: float | None
    high: float | None
    n: int
    method: IntervalMethod
    confidence: float = 0.95
    note: str = ""

    @property
    def half_width(self) -> float | None:
        if self.low is None or self.high is None:
            return None
        return (self.high - self.low) / 2

    def clipped(self, lowest: float, highest: float) -> Interval:
        """The interval cut to the values the quantity can take (a t-interval of accuracies over few users
        reaches past 0 and 1; the cut keeps its coverage, as the true mean lies inside)."""
        if self.low is None or self.high is None:
            return self
        return self.model_copy(update={"low": max(self.low, lowest), "high": min(self.high, highest)})


class PairedTest(LazyModel):
    """Arm B minus arm A over matched units: mean difference, its t-interval, and two p-values."""

    n: int
    unmatched: int = 0
    mean_diff: float | None
    diff_low: float | None
    diff_high: float | None
    t_statistic: float | None
    t_p: float | None
    wilcoxon_statistic: float | None
    wilcoxon_p: float | None
    note: str = ""
    t_reason: str = ""
    """Why ``t_p`` is None (empty when it is defined)."""
    wilcoxon_reason: str = ""
    """Why ``wilcoxon_p`` is None (empty when it is defined)."""


def _clean(values: Sequence[float] | np.ndarray) -> np.ndarray:
    array = np.asarray(list(values), dtype=float)
    if not np.all(np.isfinite(array)):
        raise ValueError("statistics need finite values (got NaN or infinity)")
    return array


def _constant(data: np.ndarray) -> bool:
    """All values equal, up to the rounding of differences of scores (0.3 - 0.1 against 0.4 - 0.2): a float
    spread of 1e-17 is no variance, and a t-test over it would print p = 0."""
    return bool(np.ptp(data) <= ROUNDING * max(1.0, float(np.max(np.abs(data)))))


def mean_ci(values: Sequence[float] | np.ndarray, confidence: float = 0.95) -> Interval:
    """Mean with a two-sided Student-t interval: mean ± t(1-α/2, n-1) · s/√n."""
    data = _clean(values)
    n = len(data)
    if n == 0:
        return Interval(mean=None, low=None, high=None, n=0, method="t", confidence=confidence, note="no data")
    mean = float(data[0]) if _constant(data) else float(data.mean())
    if n < 2:
        return Interval(mean=mean, low=None, high=None, n=n, method="t", confidence=confidence, note="n<2")
    if _constant(data):
        return Interval(mean=mean, low=mean, high=mean, n=n, method="t", confidence=confidence, note="zero variance")
    sd = float(data.std(ddof=1))
    half = float(scipy_stats.t.ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n)
    return Interval(mean=mean, low=mean - half, high=mean + half, n=n, method="t", confidence=confidence)


def bootstrap_ci(
    values: Sequence[float], confidence: float = 0.95, *, resamples: int = 10_000, seed: int = 0
) -> Interval:
    """Mean with a seeded percentile-bootstrap interval (same seed, same interval)."""
    data = _clean(values)
    n = len(data)
    if n == 0:
        return Interval(mean=None, low=None, high=None, n=0, method="bootstrap", confidence=confidence, note="no data")
    mean = float(data.mean())
    if n < 2:
        return Interval(mean=mean, low=None, high=None, n=n, method="bootstrap", confidence=confidence, note="n<2")
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, n, size=(resamples, n))].mean(axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return Interval(mean=mean, low=float(low), high=float(high), n=n, method="bootstrap", confidence=confidence)


def hierarchical_bootstrap_ci(
    groups: Sequence[Sequence[float]],
    confidence: float = 0.95,
    *,
    min_groups: int = 2,
    group_name: str = "group",
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> Interval:
    """Mean of the group means with a seeded two-level percentile bootstrap: each resample draws the groups
    with replacement, then the values inside every drawn group with replacement (a group drawn twice gets
    two independent draws). With fewer than ``min_groups`` groups the spread between groups is unknown and
    the interval is undefined; ``min_groups=1`` is for groups known not to vary (one group stands for all).
    """
    arrays = [data for data in map(_clean, groups) if len(data)]
    k = len(arrays)
    if k == 0:
        return Interval(
            mean=None, low=None, high=None, n=0, method="hierarchical_bootstrap", confidence=confidence, note="no data"
        )
    mean = float(np.mean([data.mean() for data in arrays]))
    common = dict(mean=mean, n=k, method="hierarchical_bootstrap", confidence=confidence)
    if k < min_groups:
        unknown = f"only {k} {group_name}: the spread between {group_name}s is unknown"
        return Interval(**common, low=None, high=None, note=unknown)
    if _constant(np.concatenate(arrays)):
        return Interval(**common, low=mean, high=mean, note="zero variance")
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, k, size=(resamples, k))
    draws = np.empty((resamples, k))
    for index, data in enumerate(arrays):
        slots = picks == index
        draws[slots] = data[rng.integers(0, len(data), size=(int(slots.sum()), len(data)))].mean(axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(draws.mean(axis=1), [alpha, 1 - alpha])
    return Interval(**common, low=float(low), high=float(high))


def interval(values: Sequence[float], method: CIMethod = "t", confidence: float = 0.95, seed: int = 0) -> Interval:
    """Dispatch on the configured CI method."""
    if method == "bootstrap":
        return bootstrap_ci(values, confidence, seed=seed)
    return mean_ci(values, confidence)


Unit = TypeVar("Unit", bound=Hashable)


def paired_test(
    baseline: Mapping[Unit, float], treatment: Mapping[Unit, float], confidence: float = 0.95,
    weights: Mapping[Unit, float] | None = None,
) -> PairedTest:
    """Compare ``treatment - baseline`` over the units present in both (paired t-test and Wilcoxon signed-rank).

    Units present in only one arm are counted in ``unmatched`` and left out, never imputed. With ``weights`` (a
    unit's questions) the differences are weighted (``weighted_contributions``): the mean difference is the pooled one.
    """
    keys = [key for key in baseline if key in treatment]
    unmatched = len(set(baseline) ^ set(treatment))
    differences = [treatment[key] - baseline[key] for key in keys]
    if weights is not None:
        differences = weighted_contributions(differences, [weights[key] for key in keys])
    diffs = _clean(differences)
    diffs[np.abs(diffs) <= ROUNDING] = 0.0  # 0.3 - 0.3 computed two ways is no difference
    n = len(diffs)
    diff_ci = mean_ci(diffs, confidence)
    result = dict(n=n, unmatched=unmatched, mean_diff=diff_ci.mean, diff_low=diff_ci.low, diff_high=diff_ci.high)
    if n < 2:
        few = "fewer than 2 pairs"
        return PairedTest(
            **result,
            t_statistic=None,
            t_p=None,
            wilcoxon_statistic=None,
            wilcoxon_p=None,
            note="n<2",
            t_reason=few,
            wilcoxon_reason=few,
        )
    notes: list[str] = []
    t_stat = t_p = None
    t_reason = w_reason = ""
    if _constant(diffs):
        notes.append("differences have zero variance: t-test undefined")
        t_reason = "differences have zero variance"
    else:
        t_res = scipy_stats.ttest_1samp(diffs, 0.0)
        t_stat, t_p = float(t_res.statistic), float(t_res.pvalue)
    w_stat = w_p = None
    if np.all(diffs == 0.0):
        notes.append("all differences are zero: Wilcoxon undefined")
        w_reason = "all differences are zero"
    else:
        w_res = scipy_stats.wilcoxon(diffs, zero_method="wilcox", alternative="two-sided")
        w_stat, w_p = float(w_res.statistic), float(w_res.pvalue)
    return PairedTest(
        **result,
        t_statistic=t_stat,
        t_p=t_p,
        wilcoxon_statistic=w_stat,
        wilcoxon_p=w_p,
        note="; ".join(notes),
        t_reason=t_reason,
        wilcoxon_reason=w_reason,
    )


class SampleSize(LazyModel):
    """How many pairs a two-sided paired t-test needs to reach ``power`` at ``alpha`` for ``effect``, given the
    SD of the pair differences; ``n`` is None with the reason in ``note`` when that cannot be said."""

    effect: float
    sd: float
    n: int | None
    exceeds: int | None = None
    """The largest size searched, when even it falls short of the power (``n`` is then None)."""
    power: float = 0.8
    alpha: float = 0.05
    note: str = ""


MAX_SAMPLE_SIZE = 1000
"""Largest sample size ``paired_t_sample_size`` searches; a need beyond it is reported as "more than"."""


def paired_t_power(effect: float, sd: float, n: np.ndarray | int, alpha: float = 0.05) -> np.ndarray:
    """Power of the two-sided paired t-test with ``n`` pairs: P(|T| > t crit) for T noncentral t with
    n - 1 degrees of freedom and noncentrality effect / (sd / sqrt n)."""
    sizes = np.asarray(n, dtype=float)
    df = sizes - 1
    critical = scipy_stats.t.ppf(1 - alpha / 2, df)
    shift = abs(effect) / sd * np.sqrt(sizes)
    return scipy_stats.nct.sf(critical, df, shift) + scipy_stats.nct.cdf(-critical, df, shift)


def paired_t_sample_size(
    effect: float, sd: float, *, power: float = 0.8, alpha: float = 0.05, max_n: int = MAX_SAMPLE_SIZE
) -> SampleSize:
    """The smallest number of pairs (at least 2) whose paired t-test has ``power`` against ``effect``."""
    plan = dict(effect=effect, sd=sd, power=power, alpha=alpha)
    if not math.isfinite(effect) or not math.isfinite(sd):
        raise ValueError("a sample size needs a finite effect and SD")
    if effect == 0.0:
        return SampleSize(**plan, n=None, note="the effect is zero")
    if sd <= ROUNDING:
        return SampleSize(**plan, n=None, note="the differences have zero variance")
    sizes = np.arange(2, max_n + 1)
    enough = np.flatnonzero(paired_t_power(effect, sd, sizes, alpha) >= power)
    if not len(enough):
        return SampleSize(**plan, n=None, exceeds=max_n)
    return SampleSize(**plan, n=int(sizes[enough[0]]))


def na(reason: str) -> str:
    """The text of a figure that cannot be given: "n/a (reason)", or plain "n/a" without a reason."""
    return f"{NA} ({reason})" if reason else NA


def fmt(value: float | None, digits: int = 3, *, reason: str = "") -> str:
    """A number for a table, or "n/a (reason)" when undefined."""
    return na(reason) if value is None else f"{value:.{digits}f}"


def fmt_p(value: float | None, reason: str = "") -> str:
    """A p-value for a table: "n/a (reason)" when undefined, "<0.001" when tiny."""
    if value is None:
        return na(reason)
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def fmt_interval(ci: Interval, digits: int = 3) -> str:
    """``mean [low, high]``, or the mean with "n/a (reason)" for an undefined interval, or "n/a (reason)"."""
    if ci.mean is None:
        return na(ci.note)
    if ci.low is None or ci.high is None:
        return f"{fmt(ci.mean, digits)} [{na(ci.note)}]"
    return f"{fmt(ci.mean, digits)} [{fmt(ci.low, digits)}, {fmt(ci.high, digits)}]"
