"""Writes an ablation summary as a markdown report, CSV tables and PNG plots.

The report leads with the figures over the replicated unit (seeds in the outer loop) and shows the
per-(user, seed) test only after them, labelled as conditional on the evolved prompts. A figure that cannot
be computed reads "n/a (reason)".
"""

from __future__ import annotations

import csv
from pathlib import Path

from memevo.agents.llm.accounting import dollars_cell, priced_dollars
from memevo.evolve.ablation.plots import plot_failure_split, plot_period_curves
from memevo.evolve.ablation.records import ArmSeedRecord
from memevo.evolve.ablation.summary import REPLICATE_NAMES, AblationSummary, ArmSummary, Comparison, SeedResult
from memevo.evolve.presentation.headline import objective_label
from memevo.evolve.stats import BOOTSTRAP_RESAMPLES, PairedTest, SampleSize, fmt, fmt_interval, fmt_p, na

OUTPUT_FILES = {
    "markdown": "ablation.md",
    "arms_csv": "ablation_arms.csv",
    "seeds_csv": "ablation_seeds.csv",
    "tests_csv": "ablation_tests.csv",
    "periods_csv": "ablation_periods.csv",
    "units_csv": "ablation_units.csv",
    "period_plot": "ablation_periods.png",
    "failure_plot": "ablation_failures.png",
}
CATEGORIES_CSV = "ablation_categories.csv"
"""Written (and returned as ``categories_csv``) only when the environment reports categories."""
FAILURES = "write / read / utilization failures"


def _memory_cell(value: float | None, reason: str | None) -> str:
    return fmt(value, reason=reason or "")


def _need_cell(plan: SampleSize | None, note: str) -> str:
    """Replicates needed for 80% power, "more than N" past the search, or n/a with the reason."""
    if plan is None:
        return na(note or "no observed difference")
    if plan.n is not None:
        return str(plan.n)
    if plan.exceeds is not None:
        return f"more than {plan.exceeds}"
    return na(plan.note)


def _t_interval(test: PairedTest) -> str:
    """The Student-t interval of a paired test's mean difference, or why it has none."""
    if test.diff_low is None or test.diff_high is None:
        return f"[{na(test.t_reason)}]"
    return f"[{fmt(test.diff_low)}, {fmt(test.diff_high)}]"


def _design(summary: AblationSummary, level: str, metric: str) -> list[str]:
    intervals = (f"intervals are {level} hierarchical bootstrap intervals (seeds drawn with replacement, then users "
                 f"within each drawn seed; {BOOTSTRAP_RESAMPLES} seeded resamples)")
    if summary.level == "unit":
        return [f"Metric: {metric}, the runs' objective. Every test user evolves its own prompt (protocol "
                f"amemgym_period), so each (user, seed) unit is an independent replicate: arms are paired over units, "
                f"and {intervals}."]
    return [f"Metric: {metric}, the runs' objective, as the mean over a seed's test users. All test users of a seed "
            "are scored with the one prompt that seed's evolution found, so the effect of evolving is replicated once "
            f"per seed, not once per user: arms are paired seed by seed, and {intervals}. With few seeds a bootstrap "
            "interval is too narrow (it cannot show spread the seeds did not show); the paired t-test over seeds, "
            "with its t interval, is the check."]


def arm_table(summary: AblationSummary) -> list[str]:
    """The arm table as markdown rows, as the report shows it (the ablation's MLflow run shows it too)."""
    return _arm_rows(summary, f"{summary.confidence:.0%}", objective_label(summary.metric))


def _arm_rows(summary: AblationSummary, level: str, metric: str) -> list[str]:
    lines = [
        f"| arm | seeds | (user, seed) units | {metric}, mean over seeds [{level} bootstrap CI] "
        f"| memory score (pooled, mean over seeds) | {FAILURES} | calls | tokens | $ |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for arm in summary.arms:
        lines.append(
            f"| {arm.arm} | {','.join(map(str, arm.seeds))} | {arm.n_units} | {fmt_interval(arm.mean)} "
            f"| {_memory_cell(arm.memory, arm.memory_na_reason)} | {arm.failure_cell} | {arm.spend.calls} "
            f"| {arm.spend.prompt_tokens + arm.spend.completion_tokens} | {dollars_cell(arm.spend)} |"
        )
    cancelled = [f"{arm.arm} {arm.spend.cancelled_calls}" for arm in summary.arms if arm.spend.cancelled_calls]
    if cancelled:  # sent, perhaps served and billed: their tokens and dollars are not in the table
        lines += ["", f"Calls include requests the runs cancelled themselves (a pruned or stopped play; their cost is "
                  f"not known): {', '.join(cancelled)}."]
    return lines


def _test_rows(summary: AblationSummary, level: str) -> list[str]:
    name = REPLICATE_NAMES[summary.level]
    pairs = "seed by seed" if summary.level == "seed" else "over (user, seed) units"
    lines = [
        f"Paired tests against **{summary.baseline}**, {pairs} (difference = arm − baseline):",
        "",
        f"| arm | {name}s | mean difference [{level} bootstrap CI] | [{level} t CI over {name}s] | paired t p "
        f"| Wilcoxon p | SD of {name} differences | {name}s for 80% power at the observed difference | {name}s for 80% power at "
        f"±{fmt(summary.min_effect)} | note |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in summary.comparisons:
        t = c.test
        note = _test_note(t, f"{name}s")
        lines.append(
            f"| {c.arm} | {t.n} | {fmt_interval(c.interval)} | {_t_interval(t)} | {fmt_p(t.t_p, t.t_reason)} "
            f"| {fmt_p(t.wilcoxon_p, t.wilcoxon_reason)} | {fmt(c.sd_diff, reason=c.need_note)} "
            f"| {_need_cell(c.need_observed, c.need_note)} | {_need_cell(c.need_minimal, c.need_note)} | {note} |"
        )
    lines += ["", f"{name.capitalize()}s for 80% power: how many {name}s a two-sided paired t-test at α = 0.05 needs "
              f"to find that difference 4 times in 5, planned from the SD of the {name} differences above (an SD "
              f"from few {name}s is itself uncertain)."]
    return lines


def _test_note(test: PairedTest, units: str) -> str:
    """The test's own note and how many unpaired units it left out."""
    unmatched = f"{test.unmatched} unmatched {units} left out" if test.unmatched else ""
    return "; ".join(part for part in (test.note, unmatched) if part)


def _seed_row(arm: ArmSummary, result: SeedResult) -> str:
    users = f"{result.n_users}" + (f" ({result.n_missing} without a value)" if result.n_missing else "")
    return (f"| {arm.arm} | {result.seed} | {users} | {fmt(result.mean, reason='no test user has a value')} "
            f"| {_memory_cell(result.memory, result.memory_na_reason)} | {result.failure_cell} |")


def _seed_rows(summary: AblationSummary, metric: str) -> list[str]:
    return [
        f"Per seed (one evolution each; {metric} is the mean over the seed's test users):",
        "",
        f"| arm | seed | test users | {metric} | memory score (pooled) | {FAILURES} |",
        "|---|---|---|---|---|---|",
        *[_seed_row(arm, result) for arm in summary.arms for result in arm.per_seed],
    ]


def _conditional_rows(summary: AblationSummary, level: str) -> list[str]:
    lines = [
        "Conditional on the evolved prompts (secondary): paired over (user, seed) units, which holds each seed's "
        "evolved prompt fixed. These figures say how sure we can be about these prompts on these users, not what a "
        "new evolution would do; they are not evidence that evolving helps.",
        "",
        f"| arm | units | mean difference [{level} t CI] | paired t p | Wilcoxon p | note |",
        "|---|---|---|---|---|---|",
    ]
    for c in summary.comparisons:
        t = c.conditional
        note = _test_note(t, "units")
        lines.append(f"| {c.arm} | {t.n} | {fmt(t.mean_diff, reason=t.t_reason)} {_t_interval(t)} "
                     f"| {fmt_p(t.t_p, t.t_reason)} | {fmt_p(t.wilcoxon_p, t.wilcoxon_reason)} | {note} |")
    return lines


def _period_rows(summary: AblationSummary, metric: str) -> list[str]:
    n_periods = max((len(arm.period) for arm in summary.arms), default=0)
    if not n_periods:
        return []
    return [
        f"Per-period {metric} (mean over seeds; intervals in ablation_periods.csv):",
        "",
        "| arm | " + " | ".join(f"p{p}" for p in range(n_periods)) + " |",
        "|---|" + "---|" * n_periods,
        *[f"| {arm.arm} | " + " | ".join(fmt(ci.mean, reason="no value") for ci in arm.period) + " |"
          for arm in summary.arms],
    ]


def _category_rows(summary: AblationSummary, level: str) -> list[str]:
    """Arms side by side per benchmark category; none when no arm has categories (AMemGym)."""
    categories = list(dict.fromkeys(c.category for arm in summary.arms for c in arm.per_category))
    if not categories:
        return []
    cells = {(arm.arm, c.category): fmt_interval(c.score) for arm in summary.arms for c in arm.per_category}
    return [
        "Per category, held-out test: the best candidate's mean credit per question of the category (the "
        f"benchmark's own scoring: share right, token F1 or the judge's verdict), mean over seeds [{level} bootstrap "
        "CI over seeds; a category's score is kept per seed, not per user]:",
        "",
        "| category | " + " | ".join(arm.arm for arm in summary.arms) + " |",
        "|---|" + "---|" * len(summary.arms),
        *[f"| {category} | " + " | ".join(cells.get((arm.arm, category), na("not asked in this arm's test"))
                                         for arm in summary.arms) + " |" for category in categories],
    ]


def _warnings(summary: AblationSummary) -> list[str]:
    lines = [f"Note: {note}" for note in summary.notes]
    copies = [arm.arm for arm in summary.arms if arm.identical_seeds]
    if copies:
        lines.append(f"Warning: every seed gave identical scores in {', '.join(copies)}; the seeds are not independent "
                     "replicates there (cached or deterministic runs), so they count as one seed. Add split.seed to "
                     "seed_fields, or vary the proposer, for real replicates.")
    return lines


def render_markdown(summary: AblationSummary) -> str:
    level = f"{summary.confidence:.0%}"
    metric = objective_label(summary.metric)
    sections = [
        [f"# Ablation: {summary.name} (environment: {summary.environment})"],
        _design(summary, level, metric),
        _arm_rows(summary, level, metric),
        _test_rows(summary, level),
        _seed_rows(summary, metric),
        _conditional_rows(summary, level) if summary.level == "seed" else [],
        _period_rows(summary, metric),
        _category_rows(summary, level),
        _warnings(summary),
    ]
    return "\n\n".join("\n".join(section) for section in sections if section) + "\n"


def _write_csv(path: Path, header: list[str], rows: list[list]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def _test_row(c: Comparison) -> list:
    t, u = c.test, c.conditional
    return [
        c.arm, c.baseline, c.metric, c.level, t.n, t.unmatched, c.interval.mean, c.interval.low, c.interval.high,
        t.diff_low, t.diff_high, t.t_statistic, t.t_p, t.wilcoxon_statistic, t.wilcoxon_p, c.sd_diff,
        c.need_observed.n if c.need_observed else None, c.need_minimal.n if c.need_minimal else None,
        c.need_minimal.effect if c.need_minimal else None, t.note or c.need_note,
        u.n, u.mean_diff, u.diff_low, u.diff_high, u.t_p, u.wilcoxon_p, u.note,
    ]


TEST_COLUMNS = [
    "arm", "baseline", "metric", "level", "n", "unmatched", "mean_diff", "diff_low", "diff_high", "diff_t_low",
    "diff_t_high", "t_statistic", "t_p", "wilcoxon_statistic", "wilcoxon_p", "sd_diff", "n_for_80pct_power_observed",
    "n_for_80pct_power_min_effect", "min_effect", "note", "conditional_n", "conditional_mean_diff",
    "conditional_diff_low", "conditional_diff_high", "conditional_t_p", "conditional_wilcoxon_p", "conditional_note",
]
"""``diff_low``/``diff_high``: hierarchical bootstrap; ``diff_t_*``: Student-t over the replicates."""


def write_ablation_outputs(summary: AblationSummary, records: list[ArmSeedRecord], out_dir: Path) -> dict[str, Path]:
    """Write every output file; returns their paths keyed as in ``OUTPUT_FILES``. Empty CSV cells are figures
    that cannot be computed; the markdown gives the reasons."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {key: out_dir / name for key, name in OUTPUT_FILES.items()}
    paths["markdown"].write_text(render_markdown(summary), encoding="utf-8")
    _write_csv(
        paths["arms_csv"],
        ["arm", "metric", "seeds", "replicates", "n_units", "mean", "low", "high", "conditional_low",
         "conditional_high", "memory", "memory_na_reason", "write", "read", "util", "failures", "calls", "cache_hits",
         "prompt_tokens", "completion_tokens", "dollars", "unpriced_calls", "unknown_calls",
         "cancelled_calls"],
        [
            [arm.arm, summary.metric, " ".join(map(str, arm.seeds)), arm.replicates, arm.n_units, arm.mean.mean,
             arm.mean.low, arm.mean.high, arm.conditional.low, arm.conditional.high, arm.memory, arm.memory_na_reason]
            + ([arm.failure.write, arm.failure.read, arm.failure.util] if arm.failure else [None] * 3)
            + [arm.failure_cell, arm.spend.calls, arm.spend.cache_hits, arm.spend.prompt_tokens,
               arm.spend.completion_tokens, priced_dollars(arm.spend), arm.spend.unpriced_calls,
               arm.spend.unknown_calls, arm.spend.cancelled_calls]
            for arm in summary.arms
        ],
    )
    _write_csv(
        paths["seeds_csv"],
        ["arm", "seed", "metric", "n_users", "n_missing", "mean", "memory", "memory_na_reason", "failures"],
        [[arm.arm, r.seed, summary.metric, r.n_users, r.n_missing, r.mean, r.memory, r.memory_na_reason, r.failure_cell]
         for arm in summary.arms for r in arm.per_seed],
    )
    _write_csv(paths["tests_csv"], TEST_COLUMNS, [_test_row(c) for c in summary.comparisons])
    _write_csv(
        paths["periods_csv"],
        ["arm", "period", "metric", "mean", "low", "high", "note"],
        [[arm.arm, p, summary.metric, ci.mean, ci.low, ci.high, ci.note]
         for arm in summary.arms for p, ci in enumerate(arm.period)],
    )
    _write_csv(
        paths["units_csv"],
        ["arm", "seed", "user_id", "memory", "overall"],
        [[u.arm, u.seed, u.user_id, u.memory, u.overall] for r in records for u in r.units],
    )
    categories = [[arm.arm, c.category, summary.metric, c.n_questions, c.score.n, c.score.mean, c.score.low,
                   c.score.high, c.score.note] for arm in summary.arms for c in arm.per_category]
    if categories:
        paths["categories_csv"] = _write_csv(
            out_dir / CATEGORIES_CSV,
            ["arm", "category", "metric", "n_questions", "seeds", "mean", "low", "high", "note"], categories)
    _plots(summary, paths)
    return paths


def _plots(summary: AblationSummary, paths: dict[str, Path]) -> None:
    accuracy = summary.metric == "accuracy"
    period_plot, failure_plot = paths["period_plot"], paths["failure_plot"]
    plot_period_curves(
        {arm.arm: arm.period for arm in summary.arms}, period_plot.parent, period_plot.name,
        ylabel="accuracy (share of questions right)" if accuracy
        else "AMemGym memory score (0 = random, 1 = upper bound)",
        title=f"{summary.name}: test {objective_label(summary.metric)} per period by arm "
              f"(mean over seeds, {summary.confidence:.0%} hierarchical bootstrap)",
        memory_score=not accuracy,
    )
    plot_failure_split(
        {arm.arm: (arm.failure.write, arm.failure.read, arm.failure.util) if arm.failure else (None,) * 3
         for arm in summary.arms},
        failure_plot.parent, failure_plot.name, title=f"{summary.name}: why test questions failed, by arm",
        notes={arm.arm: arm.failure_cell for arm in summary.arms if arm.failure is None},
    )
