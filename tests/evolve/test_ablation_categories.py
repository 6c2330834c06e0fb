"""Per-category held-out scores in an ablation's summary, markdown and CSV, for environments that report
categories; none of it for one that reports none (AMemGym)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from memevo.environments.metrics.scores import CategoryScores, Scores
from memevo.evolve.ablation.records import ArmSeedRecord, UnitScore
from memevo.evolve.ablation.render import CATEGORIES_CSV, write_ablation_outputs
from memevo.evolve.ablation.summary import summarize

LOCOMO = {"objective": "accuracy", "protocol": "outer_loop", "environment": "locomo"}


def _record(arm: str, seed: int, categories: dict[str, float]) -> ArmSeedRecord:
    per_category = [CategoryScores(category=name, n_questions=10, accuracy=value) for name, value in categories.items()]
    scores = Scores.model_validate({
        "n_questions": 10 * len(categories), "accuracy": sum(categories.values()) / max(len(categories), 1),
        "random_baseline": None, "upper_bound": None, "memory_score": None, "pooled_memory_score": None,
        "memory_na_reason": "no upper bound", "n_memory_points": 0, "n_excluded": 0, "format_error_rate": 0.0,
        "random_fallback_rate": 0.0, "n_users": 2, "per_period": [], "per_category": per_category,
    })
    units = [UnitScore(arm=arm, seed=seed, user_id=f"conv-{i}", memory=None, overall=0.4 + 0.1 * i + 0.01 * seed,
                       period_overall=[0.4]) for i in range(2)]
    return ArmSeedRecord(arm=arm, seed=seed, units=units, scores=scores, config=LOCOMO)


def test_each_arm_gets_its_categories_mean_over_seeds_with_the_headline_interval(tmp_path: Path) -> None:
    records = [
        _record("seed-only", 0, {"single-hop": 0.2, "temporal": 0.4}),
        _record("seed-only", 1, {"single-hop": 0.4, "temporal": 0.4}),
        _record("complete", 0, {"single-hop": 0.5, "temporal": 0.3, "adversarial": 0.9}),
        _record("complete", 1, {"single-hop": 0.7, "temporal": 0.5}),
    ]
    summary = summarize("locomo", records, ["seed-only", "complete"])
    complete = {c.category: c for c in summary.arms[1].per_category}
    assert list(complete) == ["single-hop", "temporal", "adversarial"]
    assert complete["single-hop"].score.mean == pytest.approx(0.6) and complete["single-hop"].n_questions == 20
    assert complete["single-hop"].score.low is not None and complete["single-hop"].score.method == "hierarchical_bootstrap"
    assert complete["adversarial"].score.low is None and "only 1 seed" in complete["adversarial"].score.note
    only = {c.category: c for c in summary.arms[0].per_category}
    assert only["temporal"].score.note == "zero variance" and only["temporal"].score.mean == pytest.approx(0.4)

    paths = write_ablation_outputs(summary, records, tmp_path)
    markdown = paths["markdown"].read_text()
    assert "| category | seed-only | complete |" in markdown
    assert "| adversarial | n/a (not asked in this arm's test) | 0.900 [n/a (only 1 seed: " in markdown
    with paths["categories_csv"].open() as handle:
        rows = list(csv.DictReader(handle))
    assert [(row["arm"], row["category"], row["seeds"]) for row in rows][-1] == ("complete", "adversarial", "1")
    assert float(rows[2]["mean"]) == pytest.approx(0.6) and rows[-1]["low"] == ""


def test_one_seed_gives_every_category_a_mean_but_no_interval(tmp_path: Path) -> None:
    summary = summarize("one", [_record("a", 0, {"multi-session": 0.5}), _record("b", 0, {"multi-session": 0.75})],
                        ["a", "b"])
    (result,) = summary.arms[1].per_category
    assert result.score.mean == pytest.approx(0.75) and result.score.low is None
    assert "| multi-session | 0.500 [n/a (only 1 seed: the spread between seeds is unknown)]" in \
        write_ablation_outputs(summary, [], tmp_path)["markdown"].read_text()


def test_without_categories_there_is_no_category_section_nor_file(tmp_path: Path) -> None:
    records = [_record("a", 0, {}), _record("b", 0, {})]
    summary = summarize("amemgym-like", records, ["a", "b"])
    paths = write_ablation_outputs(summary, records, tmp_path)
    assert all(arm.per_category == [] for arm in summary.arms)
    assert "Per category" not in paths["markdown"].read_text()
    assert "categories_csv" not in paths and not (tmp_path / CATEGORIES_CSV).exists()


def test_another_environments_arms_say_the_memory_figures_are_amemgyms_not_a_missing_setting() -> None:
    summary = summarize("locomo", [_record("a", 0, {"temporal": 0.5}), _record("a", 1, {"temporal": 0.6})], ["a"])
    (arm,) = summary.arms
    assert arm.failure_cell == "n/a (AMemGym's figure; locomo has none)", "every seed shares the reason"
    assert arm.memory is None and arm.memory_na_reason == "AMemGym's figure; locomo has none"
    assert "episode.diagnose" not in arm.failure_cell
