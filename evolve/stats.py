"""Honest summary statistics for experiments: confidence intervals and paired tests between arms.

Why these choices:
- The unit of analysis is one (user, seed) pair: every arm is run on the same users with the same seeds,
  so arms can be compared pair by pair, which removes the (large) between-user variance.
- Confidence intervals are Student-t intervals over those units (``mean_ci``); a seeded percentile
  bootstrap (``bootstrap_ci``) is offered for skewed or bounded scores. Both state their method.
- Where a statistic is undefined (fewer than two units, zero variance, all differences zero) the value
  is ``None`` with a reason, and renders as "n/a" — never a made-up p-value.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Literal

import numpy as np
from scipy import stats as scipy_stats

from memevo.agents.lazy_model import LazyModel

CIMethod = Literal["t", "bootstrap"]
NA = "n/a"


class Interval(LazyModel):
    """A mean with its confidence interval; ``low``/``high`` are None when the interval is undefined."""

    mean: float | None
    low: float | None
    high: float | None
    n: int
    method: CIMethod
    confidence: float = 0.95
    note: str = ""

    @property
    def half_width(self) -> float | None:
        if self.low is None or self.high is None:
            return None
        return (self.high - self.low) / 2


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


def _clean(values: Sequence[float]) -> np.ndarray:
    array = np.asarray(list(values), dtype=float)
    if not np.all(np.isfinite(array)):
        raise ValueError("statistics need finite values (got NaN or infinity)")
    return array


def mean_ci(values: Sequence[float], confidence: float = 0.95) -> Interval:
    """Mean with a two-sided Student-t interval: mean ± t(1-α/2, n-1) · s/√n."""
    data = _clean(values)
    n = len(data)
    if n == 0:
        return Interval(mean=None, low=None, high=None, n=0, method="t", confidence=confidence, note="no data")
    mean = float(data[0]) if np.ptp(data) == 0.0 else float(data.mean())
    if n < 2:
        return Interval(mean=mean, low=None, high=None, n=n, method="t", confidence=confidence, note="n<2")
    if np.ptp(data) == 0.0:  # exact test: a float std of equal values can come out as 1e-17
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


def interval(values: Sequence[float], method: CIMethod = "t", confidence: float = 0.95, seed: int = 0) -> Interval:
    """Dispatch on the configured CI method."""
    if method == "bootstrap":
        return bootstrap_ci(values, confidence, seed=seed)
    return mean_ci(values, confidence)


def paired_test(
    baseline: Mapping[Hashable, float], treatment: Mapping[Hashable, float], confidence: float = 0.95
) -> PairedTest:
    """Compare ``treatment - baseline`` over the units present in both (paired t-test and Wilcoxon signed-rank).

    Units present in only one arm are counted in ``unmatched`` and left out, never imputed.
    """
    keys = [key for key in baseline if key in treatment]
    unmatched = len(set(baseline) ^ set(treatment))
    diffs = _clean([treatment[key] - baseline[key] for key in keys])
    n = len(diffs)
    diff_ci = mean_ci(diffs, confidence)
    result = dict(n=n, unmatched=unmatched, mean_diff=diff_ci.mean, diff_low=diff_ci.low, diff_high=diff_ci.high)
    if n < 2:
        return PairedTest(**result, t_statistic=None, t_p=None, wilcoxon_statistic=None, wilcoxon_p=None, note="n<2")
    notes: list[str] = []
    t_stat = t_p = None
    if np.ptp(diffs) == 0.0:
        notes.append("differences have zero variance: t-test undefined")
    else:
        t_res = scipy_stats.ttest_1samp(diffs, 0.0)
        t_stat, t_p = float(t_res.statistic), float(t_res.pvalue)
    w_stat = w_p = None
    if np.all(diffs == 0.0):
        notes.append("all differences are zero: Wilcoxon undefined")
    else:
        w_res = scipy_stats.wilcoxon(diffs, zero_method="wilcox", alternative="two-sided")
        w_stat, w_p = float(w_res.statistic), float(w_res.pvalue)
    return PairedTest(
        **result, t_statistic=t_stat, t_p=t_p, wilcoxon_statistic=w_stat, wilcoxon_p=w_p, note="; ".join(notes)
    )


def fmt(value: float | None, digits: int = 3) -> str:
    """A number for a table, or "n/a" when undefined."""
    return NA if value is None else f"{value:.{digits}f}"


def fmt_p(value: float | None) -> str:
    """A p-value for a table: "n/a" when undefined, "<0.001" when tiny."""
    if value is None:
        return NA
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def fmt_interval(ci: Interval, digits: int = 3) -> str:
    """``mean [low, high]``, or just the mean with "n/a" for the interval when undefined."""
    if ci.mean is None:
        return NA
    if ci.low is None or ci.high is None:
        return f"{fmt(ci.mean, digits)} [{NA}]"
    return f"{fmt(ci.mean, digits)} [{fmt(ci.low, digits)}, {fmt(ci.high, digits)}]"
