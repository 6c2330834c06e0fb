"""Statistics against values worked out by hand (closed forms and exact counts), not against scipy itself."""

from __future__ import annotations

import math

import pytest

from memevo.evolve.stats import (
    bootstrap_ci,
    fmt,
    fmt_interval,
    fmt_p,
    hierarchical_bootstrap_ci,
    mean_ci,
    paired_t_power,
    paired_t_sample_size,
    paired_test,
)


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
    assert fmt_interval(single) == "0.400 [n/a (n<2)]"
    empty = mean_ci([])
    assert empty.mean is None and fmt_interval(empty) == "n/a (no data)"
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
    assert fmt_p(result.t_p, result.t_reason) == "n/a (differences have zero variance)"
    assert fmt_p(result.wilcoxon_p, result.wilcoxon_reason) == "n/a (all differences are zero)"
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


def test_p_value_and_number_say_why_they_are_missing() -> None:
    one = paired_test({"a": 0.0}, {"a": 1.0})
    assert fmt_p(one.t_p, one.t_reason) == "n/a (fewer than 2 pairs)"
    assert fmt(None, reason="only 1 seed") == "n/a (only 1 seed)" and fmt(0.25) == "0.250"


def test_hierarchical_bootstrap_is_seeded_and_weighs_groups_equally() -> None:
    groups = [[0.1, 0.2, 0.3], [0.5, 0.7], [0.9, 0.8, 0.7, 0.6]]
    first = hierarchical_bootstrap_ci(groups, seed=4, resamples=2000)
    assert first == hierarchical_bootstrap_ci(groups, seed=4, resamples=2000)
    assert first.method == "hierarchical_bootstrap" and first.n == 3
    assert first.mean == pytest.approx((0.2 + 0.6 + 0.75) / 3)  # mean of group means, not of all 9 values
    assert first.low < first.mean < first.high
    assert min(map(min, groups)) <= first.low and first.high <= max(map(max, groups))


def test_hierarchical_bootstrap_carries_the_spread_between_groups() -> None:
    # Two groups, tight inside, far apart: a flat bootstrap over the 40 values sees only ~0.5 +- 0.08; the
    # hierarchical one draws both groups from one side half the time, so its interval reaches the group means.
    groups = [[0.0 + 0.001 * i for i in range(20)], [1.0 - 0.001 * i for i in range(20)]]
    nested = hierarchical_bootstrap_ci(groups, seed=0)
    flat = bootstrap_ci([value for group in groups for value in group], seed=0)
    assert nested.high - nested.low > 0.9 > 0.3 > flat.high - flat.low


def test_hierarchical_bootstrap_says_when_groups_are_too_few() -> None:
    single = hierarchical_bootstrap_ci([[0.2, 0.4]], group_name="seed")
    assert single.mean == pytest.approx(0.3) and single.low is None
    assert fmt_interval(single) == "0.300 [n/a (only 1 seed: the spread between seeds is unknown)]"
    within = hierarchical_bootstrap_ci([[0.2, 0.4]], min_groups=1, resamples=500)
    assert within.low is not None and within.low < 0.3 < within.high
    flat = hierarchical_bootstrap_ci([[0.5, 0.5], [0.5]])
    assert flat.low == flat.high == 0.5 and flat.note == "zero variance"
    assert hierarchical_bootstrap_ci([[], []]).mean is None


@pytest.mark.parametrize(("effect", "pairs"), [(1.0, 10), (0.8, 15), (0.5, 34), (0.2, 199)])
def test_paired_t_sample_size_matches_published_tables(effect: float, pairs: int) -> None:
    # Cohen (1988) / G*Power, one-sample or paired t, two-sided alpha 0.05, power 0.80: d = 1 -> 10,
    # d = 0.8 -> 15, d = 0.5 -> 34, d = 0.2 -> 199 pairs.
    plan = paired_t_sample_size(effect * 0.1, 0.1)
    assert plan.n == pairs
    assert paired_t_power(effect, 1.0, pairs) >= 0.8 > paired_t_power(effect, 1.0, pairs - 1)
    assert paired_t_sample_size(-effect * 0.1, 0.1).n == pairs  # the sign of the effect does not matter


def test_paired_t_power_of_a_large_effect_against_its_closed_form_limit() -> None:
    # With an effect of 50 SDs and 3 pairs the test rejects almost surely; with no effect power is alpha.
    assert paired_t_power(50.0, 1.0, 3) == pytest.approx(1.0, abs=1e-6)
    assert paired_t_power(0.0, 1.0, 7) == pytest.approx(0.05, abs=1e-9)


def test_sample_size_cannot_be_planned_without_effect_or_spread() -> None:
    assert paired_t_sample_size(0.0, 0.1).note == "the effect is zero"
    assert paired_t_sample_size(0.1, 0.0).note == "the differences have zero variance"
    tiny = paired_t_sample_size(0.001, 1.0, max_n=50)
    assert tiny.n is None and tiny.exceeds == 50


def test_float_rounding_is_no_variance() -> None:
    # 0.3 - 0.1 and 0.4 - 0.2 differ by 2.8e-17 in floats: a t-test over that "spread" would print p = 0
    result = paired_test({"a": 0.1, "b": 0.2}, {"a": 0.3, "b": 0.4})
    assert result.t_p is None and result.t_reason == "differences have zero variance"
    assert paired_test({"a": 0.1, "b": 0.2}, {"a": 0.1 + 1e-17, "b": 0.2}).wilcoxon_reason == "all differences are zero"
    assert paired_t_sample_size(0.2, 1e-17).note == "the differences have zero variance"
