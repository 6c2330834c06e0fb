"""Summaries, tables, CSVs and plots from hand-made stored records (no engine, no LLM)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from memevo.agents.llm.accounting import RoleUsage, UsageReport
from memevo.evolve.ablation_records import ArmSeedRecord, FailureRates, UnitScore
from memevo.evolve.ablation_render import write_ablation_outputs
from memevo.evolve.ablation_summary import summarize


def _record(arm: str, seed: int, memories: list[float], *, diagnose: bool = True) -> ArmSeedRecord:
    units = [
        UnitScore(
            arm=arm, seed=seed, user_id=f"u{i}", memory=m, overall=0.25 + m / 2,
            period_memory=[m, m / 2], period_overall=[0.5, 0.25],
        )
        for i, m in enumerate(memories)
    ]
    failure = FailureRates(write=0.2 + seed / 10, read=0.1, util=0.05, n_questions=10 * (seed + 1)) if diagnose else None
    return ArmSeedRecord(arm=arm, seed=seed, units=units, failure=failure, usage=UsageReport(by_role={"agent": RoleUsage(calls=10, prompt_tokens=100, completion_tokens=5, dollars=0.01)}))


def test_summary_pairs_units_and_counts_spend() -> None:
    records = [
        _record("base", 0, [0.1, 0.2]), _record("base", 1, [0.1, 0.3]),
        _record("new", 0, [0.2, 0.4]), _record("new", 1, [0.2, 0.4]),
    ]
    summary = summarize("demo", records, ["base", "new"])
    base, new = summary.arms
    assert base.n_units == 4 and base.seeds == [0, 1]
    assert base.metrics["memory"].mean == pytest.approx(0.175)
    assert new.spend.calls == 20 and new.spend.dollars == pytest.approx(0.02)
    assert len(base.period_memory) == 2 and base.period_memory[1].mean == pytest.approx(0.0875)
    memory_test = next(c for c in summary.comparisons if c.metric == "memory")
    # differences (user, seed): (u0,0) .1, (u1,0) .2, (u0,1) .1, (u1,1) .1 -> mean .125
    assert memory_test.test.n == 4 and memory_test.test.mean_diff == pytest.approx(0.125)
    assert memory_test.test.t_p is not None and memory_test.test.wilcoxon_p is not None
    assert new.identical_seeds and not base.identical_seeds
    assert new.n_units == 2  # its two seeds are copies: one seed's units count
    # write shares .2 over 10 questions and .3 over 20 questions pool to (2 + 6) / 30
    assert base.failure is not None and base.failure.write == pytest.approx(8 / 30) and base.failure.n_questions == 30


def test_seed_copies_in_both_arms_are_tested_on_one_seed() -> None:
    records = [_record(arm, seed, values) for arm, values in (("a", [0.1, 0.2, 0.4]), ("b", [0.2, 0.4, 0.5]))
               for seed in (0, 1)]
    comparison = summarize("copies", records, ["a", "b"]).comparisons[0]
    assert comparison.test.n == 3 and "seed 0 only" in comparison.test.note


def test_outputs_have_ci_and_p_value_columns_and_plots(tmp_path: Path) -> None:
    records = [_record("a", 0, [0.1, 0.2, 0.3]), _record("b", 0, [0.2, 0.2, 0.5], diagnose=False)]
    summary = summarize("demo", records, ["a", "b"])
    paths = write_ablation_outputs(summary, records, tmp_path)
    markdown = paths["markdown"].read_text()
    assert "memory score [95% CI]" in markdown and "paired t p" in markdown and "Wilcoxon p" in markdown
    assert "| b | 0 | 3 |" in markdown and "n/a" in markdown  # arm b has no diagnosis: W/R/U are n/a
    with paths["arms_csv"].open() as handle:
        rows = list(csv.DictReader(handle))
    assert {"memory_mean", "memory_low", "memory_high", "overall_low", "calls", "dollars"} <= set(rows[0])
    assert float(rows[0]["memory_mean"]) == pytest.approx(0.2)
    with paths["tests_csv"].open() as handle:
        tests = list(csv.DictReader(handle))
    assert [row["metric"] for row in tests] == ["memory", "overall"] and "t_p" in tests[0] and "wilcoxon_p" in tests[0]
    for key in ("period_plot", "failure_plot"):
        assert paths[key].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_single_unit_arms_report_na_not_fake_p(tmp_path: Path) -> None:
    records = [_record("a", 0, [0.1]), _record("b", 0, [0.3])]
    summary = summarize("tiny", records, ["a", "b"])
    assert all(c.test.t_p is None and c.test.wilcoxon_p is None for c in summary.comparisons)
    markdown = write_ablation_outputs(summary, records, tmp_path)["markdown"].read_text()
    assert "n<2" in markdown


def test_no_records_is_an_error() -> None:
    with pytest.raises(ValueError, match="no finished"):
        summarize("empty", [], ["a"])
