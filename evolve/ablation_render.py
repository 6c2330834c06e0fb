"""Writes an ablation summary as a markdown report, CSV tables and PNG plots."""

from __future__ import annotations

import csv
from pathlib import Path

from memevo.evolve.ablation_plots import plot_failure_split, plot_period_curves
from memevo.evolve.ablation_records import ArmSeedRecord, FailureRates
from memevo.evolve.ablation_summary import METRICS, AblationSummary
from memevo.evolve.stats import NA, fmt, fmt_interval, fmt_p

OUTPUT_FILES = {
    "markdown": "ablation.md",
    "arms_csv": "ablation_arms.csv",
    "tests_csv": "ablation_tests.csv",
    "periods_csv": "ablation_periods.csv",
    "units_csv": "ablation_units.csv",
    "period_plot": "ablation_periods.png",
    "failure_plot": "ablation_failures.png",
}


def _failure_cells(failure: FailureRates | None) -> str:
    if failure is None:
        return " | ".join([NA] * 3)
    return f"{fmt(failure.write)} | {fmt(failure.read)} | {fmt(failure.util)}"


def render_markdown(summary: AblationSummary) -> str:
    level = f"{summary.confidence:.0%}"
    method = "Student-t" if summary.ci_method == "t" else "seeded percentile bootstrap"
    lines = [
        f"# Ablation: {summary.name}",
        "",
        f"Units are (user, seed) pairs on the test users; intervals are {level} {method} intervals over units.",
        "",
        f"| arm | seeds | n | memory score [{level} CI] | overall accuracy [{level} CI] | write | read | util "
        "| calls | tokens | $ |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for arm in summary.arms:
        m = arm.metrics
        lines.append(
            f"| {arm.arm} | {','.join(map(str, arm.seeds))} | {arm.n_units} | {fmt_interval(m['memory'])} "
            f"| {fmt_interval(m['overall'])} | {_failure_cells(arm.failure)} "
            f"| {arm.spend.calls} | {arm.spend.prompt_tokens + arm.spend.completion_tokens} | {arm.spend.dollars:.4f} |"
        )
    lines += [
        "",
        f"Paired tests against **{summary.baseline}** over matched (user, seed) units (difference = arm − baseline):",
        "",
        f"| arm | metric | n | mean difference [{level} CI] | paired t p | Wilcoxon p | note |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in summary.comparisons:
        t = c.test
        diff = f"{fmt(t.mean_diff)} [{fmt(t.diff_low)}, {fmt(t.diff_high)}]"
        note = t.note + (f"; {t.unmatched} unmatched units left out" if t.unmatched else "")
        lines.append(f"| {c.arm} | {c.metric} | {t.n} | {diff} | {fmt_p(t.t_p)} | {fmt_p(t.wilcoxon_p)} | {note} |")
    n_periods = max((len(arm.period_memory) for arm in summary.arms), default=0)
    if n_periods:
        lines += [
            "",
            "Per-period memory score (mean over units; intervals in ablation_periods.csv):",
            "",
            "| arm | " + " | ".join(f"p{p}" for p in range(n_periods)) + " |",
            "|---|" + "---|" * n_periods,
        ]
        lines += [
            f"| {arm.arm} | " + " | ".join(fmt(ci.mean) for ci in arm.period_memory) + " |" for arm in summary.arms
        ]
    warnings = [arm.arm for arm in summary.arms if arm.identical_seeds]
    if warnings:
        lines += ["", f"Warning: every seed gave identical scores in {', '.join(warnings)}; the seeds are not "
                  "independent replicates there (cached or deterministic runs), so n counts one seed's units. "
                  "Add split.seed to seed_fields, or vary the proposer, for real replicates."]
    return "\n".join(lines) + "\n"


def _write_csv(path: Path, header: list[str], rows: list[list]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def write_ablation_outputs(summary: AblationSummary, records: list[ArmSeedRecord], out_dir: Path) -> dict[str, Path]:
    """Write every output file; returns their paths keyed as in ``OUTPUT_FILES``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {key: out_dir / name for key, name in OUTPUT_FILES.items()}
    paths["markdown"].write_text(render_markdown(summary), encoding="utf-8")
    metric_cols = [f"{name}_{part}" for name in METRICS for part in ("mean", "low", "high", "n")]
    _write_csv(
        paths["arms_csv"],
        ["arm", "seeds", "n_units", *metric_cols, "write", "read", "util", "calls", "cache_hits", "prompt_tokens", "completion_tokens", "dollars"],
        [
            [arm.arm, " ".join(map(str, arm.seeds)), arm.n_units]
            + [v for name in METRICS for v in (arm.metrics[name].mean, arm.metrics[name].low, arm.metrics[name].high, arm.metrics[name].n)]
            + ([arm.failure.write, arm.failure.read, arm.failure.util] if arm.failure else [None] * 3)
            + [arm.spend.calls, arm.spend.cache_hits, arm.spend.prompt_tokens, arm.spend.completion_tokens, arm.spend.dollars]
            for arm in summary.arms
        ],
    )
    _write_csv(
        paths["tests_csv"],
        ["arm", "baseline", "metric", "n", "unmatched", "mean_diff", "diff_low", "diff_high", "t_statistic", "t_p",
         "wilcoxon_statistic", "wilcoxon_p", "note"],
        [
            [c.arm, c.baseline, c.metric, c.test.n, c.test.unmatched, c.test.mean_diff, c.test.diff_low, c.test.diff_high,
             c.test.t_statistic, c.test.t_p, c.test.wilcoxon_statistic, c.test.wilcoxon_p, c.test.note]
            for c in summary.comparisons
        ],
    )
    _write_csv(
        paths["periods_csv"],
        ["arm", "period", "memory_mean", "memory_low", "memory_high", "overall_mean", "overall_low", "overall_high"],
        [
            [arm.arm, p, mem.mean, mem.low, mem.high, acc.mean, acc.low, acc.high]
            for arm in summary.arms
            for p, (mem, acc) in enumerate(zip(arm.period_memory, arm.period_overall))
        ],
    )
    _write_csv(
        paths["units_csv"],
        ["arm", "seed", "user_id", "memory", "overall"],
        [[u.arm, u.seed, u.user_id, u.memory, u.overall] for r in records for u in r.units],
    )
    has_memory = any(ci.mean is not None for arm in summary.arms for ci in arm.period_memory)
    period_plot, failure_plot = paths["period_plot"], paths["failure_plot"]
    plot_period_curves(
        {arm.arm: arm.period_memory if has_memory else arm.period_overall for arm in summary.arms},
        period_plot.parent, period_plot.name,
        ylabel="memory score (0 = random, 1 = upper bound)" if has_memory else "accuracy (share of questions right)",
        title=f"{summary.name}: test score per period by arm (mean, 95% interval)", memory_score=has_memory,
    )
    plot_failure_split(
        {arm.arm: (arm.failure.write, arm.failure.read, arm.failure.util) if arm.failure else (None,) * 3 for arm in summary.arms},
        failure_plot.parent, failure_plot.name,
        title=f"{summary.name}: why test questions failed, by arm",
    )
    return paths
