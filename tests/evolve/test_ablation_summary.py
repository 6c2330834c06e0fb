"""Summaries, tables, CSVs and plots from hand-made stored records (no engine, no LLM)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from memevo.agents.llm.accounting import RoleUsage, UsageReport
from memevo.environments.metrics.failure import FailureSplit
from memevo.environments.metrics.scores import Scores
from memevo.evolve.ablation.records import ArmSeedRecord, FailureRates, UnitScore, find_arm_records, save_arm_record
from memevo.evolve.ablation.render import arm_table, write_ablation_outputs
from memevo.evolve.ablation.run import summary_metrics
from memevo.evolve.ablation.summary import summarize
from memevo.evolve.tracking.ablation_pages import ablation_note

OUTER_LOOP = {"objective": "accuracy", "protocol": "outer_loop"}
IN_EPISODE = {"objective": "accuracy", "protocol": "amemgym_period"}


def _record(arm: str, seed: int, accuracies: list[float], *, diagnose: bool = True, config: dict | None = None,
            scores: Scores | None = None) -> ArmSeedRecord:
    units = [
        UnitScore(
            arm=arm, seed=seed, user_id=f"u{i}", memory=2 * a - 0.5, overall=a,
            period_memory=[a, a / 2], period_overall=[a, a / 2],
        )
        for i, a in enumerate(accuracies)
    ]
    failure = FailureRates(write=0.2 + seed / 10, read=0.1, util=0.05, n_questions=10 * (seed + 1)) if diagnose else None
    usage = UsageReport(by_role={"agent": RoleUsage(calls=10, prompt_tokens=100, completion_tokens=5, dollars=0.01)})
    if scores is not None and failure is not None:  # the record's split is the one its scores carry
        split = FailureSplit(write=failure.write, read=failure.read, utilization=failure.util,
                             n_questions=failure.n_questions)
        scores = scores.model_copy(update={"failure": split})
    return ArmSeedRecord(arm=arm, seed=seed, units=units, failure=failure, usage=usage,
                         config=OUTER_LOOP if config is None else config, scores=scores)


def _scores(*, pooled: float | None = None, reason: str | None = None, coverage: float | None = None) -> Scores:
    """Test scores as the engine stores them: a memory score or its reason, probes read or not."""
    probes = None if coverage is None else {
        "n_probes": 10, "probe_format_errors": 6, "probe_format_error_rate": 0.6, "n_incorrect": 5,
        "n_attributed": round(5 * coverage), "coverage": coverage, "min_coverage": 0.9,
    }
    return Scores.model_validate({
        "n_questions": 10, "accuracy": 0.5, "random_baseline": 0.25, "upper_bound": 0.9, "memory_score": pooled,
        "pooled_memory_score": pooled, "memory_na_reason": reason, "n_memory_points": 4, "n_excluded": 0,
        "format_error_rate": 0.0, "random_fallback_rate": 0.0, "n_users": 2, "per_period": [], "probes": probes,
    })


# Three evolutions (seeds) of 20 test users each. Within a seed the arm's gain over the baseline is nearly the
# same for every user (the evolved prompt is shared), but it differs a lot between seeds: +0.25, +0.02, +0.09.
SEED_SHIFTS = {0: 0.25, 1: 0.02, 2: 0.09}


def _shared_prompt_ablation() -> list[ArmSeedRecord]:
    records = []
    for seed, shift in SEED_SHIFTS.items():
        base = [0.4 + 0.01 * ((7 * i + seed) % 11) for i in range(20)]
        records.append(_record("base", seed, base))
        records.append(_record("evolved", seed, [a + shift + 0.005 * ((3 * i) % 5 - 2) for i, a in enumerate(base)]))
    return records


def test_seed_level_test_is_not_fooled_by_users_sharing_a_prompt(tmp_path: Path) -> None:
    records = _shared_prompt_ablation()
    summary = summarize("shared", records, ["base", "evolved"])
    comparison = summary.comparisons[0]
    assert summary.level == "seed" and summary.metric == "accuracy"
    # over 60 (user, seed) units the gain looks certain; over the 3 evolutions that produced it, it does not
    assert comparison.conditional.n == 60 and comparison.conditional.t_p < 0.001
    assert comparison.test.n == 3 and comparison.test.t_p > 0.1
    assert comparison.test.mean_diff == pytest.approx(sum(SEED_SHIFTS.values()) / 3, abs=1e-9)
    assert comparison.interval.method == "hierarchical_bootstrap" and comparison.interval.n == 3
    # seeds needed: a paired t on the observed seed SD; more for the smaller stated minimal effect
    assert comparison.sd_diff == pytest.approx(0.1179, abs=1e-3)
    assert comparison.need_observed is not None and comparison.need_minimal is not None
    assert 8 <= comparison.need_observed.n <= 12 < comparison.need_minimal.n

    markdown = write_ablation_outputs(summary, records, tmp_path)["markdown"].read_text()
    assert "replicated once per seed" in markdown
    assert "| evolved | 3 | 0.120 [" in markdown
    assert f"| {comparison.need_observed.n} | {comparison.need_minimal.n} |" in markdown
    primary = markdown.index("Paired tests against **base**, seed by seed")
    conditional = markdown.index("Conditional on the evolved prompts")
    assert primary < conditional and "| evolved | 60 | 0.120 [" in markdown[conditional:]
    assert "<0.001" in markdown[conditional:] and "<0.001" not in markdown[primary:conditional]


def test_arm_means_are_means_over_seeds_with_per_seed_rows(tmp_path: Path) -> None:
    records = [_record("a", 0, [0.2, 0.4]), _record("a", 1, [0.6, 0.6, 0.6, 0.6]), _record("b", 0, [0.5, 0.5]),
               _record("b", 1, [0.7, 0.7, 0.7, 0.9])]
    summary = summarize("weights", records, ["a", "b"])
    arm = summary.arms[0]
    assert arm.mean.mean == pytest.approx((0.3 + 0.6) / 2)  # each evolution weighs the same, whatever its users
    assert [result.mean for result in arm.per_seed] == pytest.approx([0.3, 0.6])
    assert arm.n_units == 6 and arm.spend.calls == 20 and arm.spend.dollars == pytest.approx(0.02)
    # write shares .2 over 10 questions and .3 over 20 questions pool to (2 + 6) / 30
    assert arm.failure is not None and arm.failure.write == pytest.approx(8 / 30)
    paths = write_ablation_outputs(summary, records, tmp_path)
    with paths["seeds_csv"].open() as handle:
        rows = list(csv.DictReader(handle))
    assert [(row["arm"], row["seed"], row["n_users"]) for row in rows] == [
        ("a", "0", "2"), ("a", "1", "4"), ("b", "0", "2"), ("b", "1", "4")]
    assert float(rows[1]["mean"]) == pytest.approx(0.6)
    markdown = paths["markdown"].read_text()
    assert "| a | 1 | 4 | 0.600 |" in markdown


def test_one_seed_gives_no_interval_over_seeds_but_says_why(tmp_path: Path) -> None:
    records = [_record("a", 0, [0.1, 0.2, 0.3]), _record("b", 0, [0.2, 0.2, 0.5])]
    summary = summarize("one-seed", records, ["a", "b"])
    comparison = summary.comparisons[0]
    assert comparison.test.t_p is None and comparison.need_observed is None
    assert comparison.conditional.n == 3 and comparison.conditional.t_p is not None
    markdown = write_ablation_outputs(summary, records, tmp_path)["markdown"].read_text()
    assert "0.200 [n/a (only 1 seed: the spread between seeds is unknown)]" in markdown
    assert "n/a (fewer than 2 pairs)" in markdown and "n/a (1 seed: no SD between seeds)" in markdown


def test_memory_score_and_failure_split_are_na_with_the_engine_reason(tmp_path: Path) -> None:
    not_above = "upper bound 0.300 not above random 0.250 over 10 questions (95% lower bound 0.120): no memory"
    records = [
        _record("a", 0, [0.3, 0.5], scores=_scores(pooled=0.4, coverage=1.0)),
        _record("a", 1, [0.4, 0.5], scores=_scores(reason=not_above, coverage=0.4), diagnose=False),
        _record("b", 0, [0.5, 0.6], scores=_scores(pooled=0.6), diagnose=False),
        _record("b", 1, [0.5, 0.7], scores=_scores(pooled=0.8), diagnose=False),
    ]
    summary = summarize("reasons", records, ["a", "b"])
    a, b = summary.arms
    assert a.memory is None and a.memory_na_reason == f"seed 1: {not_above}"
    assert b.memory == pytest.approx(0.7) and b.memory_na_reason is None
    assert a.failure_cell == "n/a (probe coverage 40%) in seed 1"
    assert b.failure_cell == "n/a (no diagnosis; set episode.diagnose: true) in seed 0"
    paths = write_ablation_outputs(summary, records, tmp_path)
    markdown = paths["markdown"].read_text()
    assert f"| n/a (seed 1: {not_above}) | n/a (probe coverage 40%) in seed 1 |" in markdown
    assert f"| a | 1 | 2 | 0.450 | n/a ({not_above}) | n/a (probe coverage 40%) |" in markdown
    assert "| b | 0,1 | 4 | 0.575 [" in markdown and "| 0.700 |" in markdown
    assert paths["failure_plot"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_records_written_before_scores_were_kept_still_render(tmp_path: Path) -> None:
    old = _record("a", 0, [0.2, 0.4]).model_dump(mode="json")
    old.pop("scores")
    old["config"] = {"objective": "memory_score"}  # before the rename this decided on AMemGym's ratio
    path = tmp_path / "a" / "seed-0" / "arm_result.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(old))
    save_arm_record(_record("b", 0, [0.3, 0.5], config={"objective": "memory_score"}), tmp_path)
    records = find_arm_records(tmp_path)
    summary = summarize("old", records, ["a", "b"])
    assert summary.metric == "amemgym_memory_score"
    assert summary.arms[0].mean.mean == pytest.approx(0.1)  # memory = 2 * accuracy - 0.5 in these records
    markdown = write_ablation_outputs(summary, records, tmp_path)["markdown"].read_text()
    assert "Metric: AMemGym memory score" in markdown
    assert "n/a (not in records written before test scores were kept)" in markdown
    assert "0.200 / 0.100 / 0.050" in markdown  # the split such a record did store


def test_per_user_evolution_pairs_over_units(tmp_path: Path) -> None:
    records = [_record("a", 0, [0.1, 0.2, 0.4, 0.3], config=IN_EPISODE),
               _record("b", 0, [0.2, 0.4, 0.5, 0.5], config=IN_EPISODE)]
    summary = summarize("in-episode", records, ["a", "b"])
    comparison = summary.comparisons[0]
    assert summary.level == "unit" and comparison.test == comparison.conditional and comparison.test.n == 4
    assert comparison.interval.low is not None and comparison.need_observed is not None
    markdown = write_ablation_outputs(summary, records, tmp_path)["markdown"].read_text()
    assert "each (user, seed) unit is an independent replicate" in markdown
    assert "users for 80% power" in markdown and "Conditional on the evolved prompts" not in markdown


def test_mixed_objectives_compare_on_accuracy() -> None:
    records = [_record("a", 0, [0.1, 0.2]), _record("b", 0, [0.3, 0.4], config={"objective": "amemgym_memory_score"})]
    summary = summarize("mixed", records, ["a", "b"])
    assert summary.metric == "accuracy" and "different objectives" in summary.notes[0]


def test_seed_copies_in_both_arms_count_as_one_seed(tmp_path: Path) -> None:
    records = [_record(arm, seed, values) for arm, values in (("a", [0.1, 0.2, 0.4]), ("b", [0.2, 0.4, 0.5]))
               for seed in (0, 1)]
    summary = summarize("copies", records, ["a", "b"])
    comparison = summary.comparisons[0]
    assert comparison.test.n == 1 and comparison.conditional.n == 3 and "seed 0 only" in comparison.conditional.note
    assert all(arm.identical_seeds and arm.replicates == 1 for arm in summary.arms)
    markdown = write_ablation_outputs(summary, records, tmp_path)["markdown"].read_text()
    assert "not independent replicates" in markdown


def test_outputs_have_interval_and_test_columns_and_plots(tmp_path: Path) -> None:
    records = _shared_prompt_ablation()
    paths = write_ablation_outputs(summarize("demo", records, ["base", "evolved"]), records, tmp_path)
    with paths["arms_csv"].open() as handle:
        arms = list(csv.DictReader(handle))
    assert {"mean", "low", "high", "conditional_low", "memory", "memory_na_reason", "calls", "dollars"} <= set(arms[0])
    with paths["tests_csv"].open() as handle:
        tests = list(csv.DictReader(handle))
    assert tests[0]["level"] == "seed" and tests[0]["n"] == "3" and tests[0]["conditional_n"] == "60"
    assert float(tests[0]["t_p"]) > 0.1 > 0.001 > float(tests[0]["conditional_t_p"])
    for key in ("period_plot", "failure_plot"):
        assert paths[key].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_no_records_is_an_error() -> None:
    with pytest.raises(ValueError, match="no finished"):
        summarize("empty", [], ["a"])


def test_unpriced_spend_is_never_a_dollar_figure(tmp_path: Path) -> None:
    records = _shared_prompt_ablation()
    unpriced = UsageReport(by_role={"agent": RoleUsage(calls=10, prompt_tokens=100, unpriced_calls=10)})
    records = [record.model_copy(update={"usage": unpriced}) for record in records]
    summary = summarize("local", records, ["base", "evolved"])
    paths = write_ablation_outputs(summary, records, tmp_path)
    arm_row = next(line for line in paths["markdown"].read_text().splitlines() if line.startswith("| base |"))
    assert arm_row.endswith("| unpriced |") and "0.0000" not in arm_row
    with paths["arms_csv"].open() as handle:
        arms = list(csv.DictReader(handle))
    assert arms[0]["dollars"] == "" and int(arms[0]["unpriced_calls"]) > 0
    metrics = summary_metrics(summary)
    assert "base.dollars" not in metrics and metrics["base.unpriced_calls"] > 0


def test_the_ablation_run_description_names_arms_seeds_and_the_arm_table() -> None:
    summary = summarize("demo", _shared_prompt_ablation(), ["base", "evolved"])
    note = next(iter(ablation_note(summary, arm_table(summary)).values()))
    assert "**demo**" in note and "**evolved**" in note and "3 seed(s)" in note
    assert "| arm | seeds |" in note and "| evolved | 0,1,2 |" in note


def test_requests_the_runs_cancelled_reach_the_report_the_csv_and_mlflow(tmp_path: Path) -> None:
    records = _shared_prompt_ablation()
    cancelled = UsageReport(by_role={"agent": RoleUsage(calls=10, prompt_tokens=100, cancelled_calls=2)})
    records = [record.model_copy(update={"usage": cancelled}) if record.arm == "evolved" else record
               for record in records]
    summary = summarize("demo", records, ["base", "evolved"])
    paths = write_ablation_outputs(summary, records, tmp_path)
    assert "cancelled themselves (a pruned or stopped play; their cost is not known): evolved 6." in paths[
        "markdown"].read_text()
    with paths["arms_csv"].open() as handle:
        arms = {row["arm"]: row for row in csv.DictReader(handle)}
    assert (arms["base"]["cancelled_calls"], arms["evolved"]["cancelled_calls"]) == ("0", "6")
    assert summary_metrics(summary)["evolved.cancelled_calls"] == 6
