"""One name per quantity in the held-out lines: accuracy only when every question is multiple choice, the score
named by its credit (``score (F1)``) otherwise, and per-category figures that say n/a where an arm met none."""

from __future__ import annotations

from memevo.environments.metrics import Scores
from memevo.environments.metrics.scores import CategoryScores
from memevo.evolve.presentation.headline import category_line, held_out_line
from memevo.evolve.tracking.entries import category_metrics


def scores(accuracy: float, scoring: dict[str, int], categories: dict[str, float]) -> Scores:
    return Scores(n_users=1, per_period=[], n_questions=sum(scoring.values()), accuracy=accuracy,
                  random_baseline=None, upper_bound=None, memory_score=None, n_memory_points=0, n_excluded=0,
                  format_error_rate=0.0, random_fallback_rate=0.0, scoring=scoring,
                  per_category=[CategoryScores(category=name, n_questions=2, accuracy=value)
                                for name, value in categories.items()])


def test_free_text_is_a_score_named_by_its_credit_and_multiple_choice_follows_the_run() -> None:
    f1 = scores(0.4, {"token_f1": 3}, {})
    assert held_out_line("accuracy", f1, f1) == "test score (F1): seed 0.400 -> best 0.400"
    choice = scores(0.5, {"choice": 3}, {})
    assert held_out_line("accuracy", choice, choice).startswith("test accuracy: ")
    assert held_out_line("accuracy", choice, choice, figure="score").startswith("test score: ")


def test_each_category_is_shown_for_both_arms_and_n_a_where_one_met_none() -> None:
    seed = scores(0.5, {"token_f1": 4}, {"temporal": 0.25})
    best = scores(0.75, {"token_f1": 4}, {"temporal": 0.5, "multi-hop": 1.0})
    assert category_line(seed, best) == ("test per category (score (F1), seed -> best): temporal 0.250 -> 0.500 "
                                         "(2 q), multi-hop n/a (not asked) -> 1.000 (2 q)")
    plain = scores(0.5, {"choice": 2}, {})
    assert category_line(plain, plain) is None


def test_category_metrics_keep_names_mlflow_accepts() -> None:
    summary = scores(0.5, {"token_f1": 2}, {"open-domain": 0.5, "what? (x)": 0.25})
    assert category_metrics("val_score", summary) == {"val_score/category/open-domain": 0.5,
                                                      "val_score/category/what_ _x_": 0.25}
