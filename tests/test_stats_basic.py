"""Statistics against values worked out by hand (closed forms and exact counts), not against scipy itself."""

from __future__ import annotations

import math

import pytest

from memevo.evolve.stats import bootstrap_ci, fmt_interval, fmt_p, mean_ci, paired_test


def test_t_interval_matches_hand_computation() -> None:
    # mean 3, s = sqrt(2.5), se = s/sqrt(5) = sqrt(0.5); t(0.975, 4) = 2.776445 from a t table.
    ci = mean_ci([1, 2, 3, 4, 5])
    half = 2.776445 * math.sqrt(0.5)
    assert ci.mean == pytest.approx(3.0)
    assert ci.low == pytest.approx(3 - half, abs=1e-5)
    assert ci.high == pytest.approx(3 + half, abs=1e-5)
    assert ci.n == 5 and ci.method == "t"


def test_interval_undefined_cases_say_so() -> None:
    single = mean_ci([0.4])
    assert single.mean == 0.4 and single.low is None and single.note == "n<2"
    assert fmt_interval(single) == "0.400 [n/a]"
    empty = mean_ci([])
    assert empty.mean is None and fmt_interval(empty) == "n/a"
    flat = mean_ci([0.2, 0.2, 0.2])
    assert flat.low == flat.high == pytest.approx(0.2) and flat.note == "zero variance"


def _t3_two_sided_p(t: float) -> float:
    """Closed-form CDF of Student's t with 3 degrees of freedom."""
    x = t / math.sqrt(3)
    cdf = 0.5 + (x / (1 + x * x) + math.atan(x)) / math.pi
    return 2 * (1 - cdf)


def test_paired_t_test_matches_closed_form() -> None:
    base = {("u1", 0): 0.0, ("u2", 0): 0.0, ("u3", 0): 1.0, ("u4", 0): 1.0}
    treat = {("u1", 0): 1.0, ("u2", 0): 2.0, ("u3", 0): 3.0, ("u4", 0): 4.0}
    # differences 1, 2, 2, 3: mean 2, s = sqrt(2/3), t = 2 / (s / 2) = 4.898979, df = 3
    result = paired_test(base, treat)
    t = 2 / (math.sqrt(2 / 3) / 2)
    assert result.n == 4 and result.unmatched == 0
    assert result.mean_diff == pytest.approx(2.0)
    assert result.t_statistic == pytest.approx(t)
    assert result.t_p == pytest.approx(_t3_two_sided_p(t), rel=1e-6)
    # t(0.975, 3) = 3.182446 from a t table
    assert result.diff_low == pytest.approx(2 - 3.182446 * math.sqrt(2 / 3) / 2, abs=1e-5)


def test_wilcoxon_exact_p_by_counting_rank_subsets() -> None:
    # differences 4, 3, 2, 1, -0.5: ranks of |d| are 5, 4, 3, 2, 1; W- = 1. Of the 2^5 sign patterns,
    # two have a negative-rank sum <= 1 (none, {1}), so the two-sided exact p = 2 * 2/32 = 0.125.
    base = {u: 0.0 for u in "abcde"}
    treat = dict(zip("abcde", [4.0, 3.0, 2.0, 1.0, -0.5]))
    result = paired_test(base, treat)
    assert result.wilcoxon_statistic == pytest.approx(1.0)
    assert result.wilcoxon_p == pytest.approx(0.125)


def test_constant_nonzero_differences_leave_t_undefined_but_wilcoxon_exact() -> None:
    base = {u: 0.1 for u in "abcd"}
    treat = {u: 0.35 for u in "abcd"}
    result = paired_test(base, treat)
    assert result.t_p is None and "zero variance" in result.note
    assert result.wilcoxon_p == pytest.approx(2 / 2**4)  # all four signs positive: 2 * (1/16)
    assert result.mean_diff == pytest.approx(0.25)


def test_identical_arms_give_no_p_value() -> None:
    same = {u: 0.5 for u in "abc"}
    result = paired_test(same, dict(same))
    assert result.t_p is None and result.wilcoxon_p is None
    assert fmt_p(result.t_p) == "n/a"
    assert result.mean_diff == 0.0


def test_unmatched_units_are_counted_not_imputed() -> None:
    result = paired_test({"a": 0.0, "b": 1.0, "c": 2.0}, {"a": 1.0, "b": 1.0, "z": 9.0})
    assert result.n == 2 and result.unmatched == 2
    assert result.mean_diff == pytest.approx(0.5)
    one = paired_test({"a": 0.0}, {"a": 1.0})
    assert one.n == 1 and one.t_p is None and one.note == "n<2"


def test_non_finite_values_are_rejected() -> None:
    with pytest.raises(ValueError, match="finite"):
        mean_ci([0.1, float("nan")])


def test_bootstrap_is_seeded_and_sane() -> None:
    values = [0.1, 0.5, 0.3, 0.9, 0.2, 0.4]
    first, again = bootstrap_ci(values, seed=3), bootstrap_ci(values, seed=3)
    assert first == again and first.method == "bootstrap"
    assert first.low < first.mean < first.high
    assert min(values) <= first.low and first.high <= max(values)
    flat = bootstrap_ci([0.7] * 5)
    assert flat.low == pytest.approx(0.7) and flat.high == pytest.approx(0.7)


def test_p_value_formatting() -> None:
    assert fmt_p(0.0001) == "<0.001"
    assert fmt_p(0.04321) == "0.043"
