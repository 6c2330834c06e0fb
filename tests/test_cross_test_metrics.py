"""The cross-benchmark test's tracker metrics are named by what the figure is: accuracy where every question was a
choice (AMemGym's names stay as they were), score where free text was scored."""

from __future__ import annotations

import pytest

from memevo.environments.metrics import Scores
from memevo.evolve.cross_test import CrossTestResult, cross_test_metrics


def scores(accuracy: float, scoring: dict[str, int]) -> Scores:
    return Scores(n_users=1, per_period=[], n_questions=sum(scoring.values()), accuracy=accuracy,
                  random_baseline=None, upper_bound=None, memory_score=None, n_memory_points=0, n_excluded=0,
                  format_error_rate=0.0, random_fallback_rate=0.0, scoring=scoring)


def result(environment: str, scoring: dict[str, int]) -> CrossTestResult:
    return CrossTestResult(environment=environment, data="data.json", seed_id="seed", best_id="best",
                           seed_scores=scores(0.25, scoring), best_scores=scores(0.5, scoring))


@pytest.mark.parametrize("scoring", [{"choice": 4}, {}])  # {}: a record written before scoring was counted
def test_choice_only_environments_keep_accuracy_names(scoring: dict[str, int]) -> None:
    assert cross_test_metrics(result("amemgym", scoring)) == {"cross_amemgym_seed_accuracy": 0.25,
                                                              "cross_amemgym_best_accuracy": 0.5}


def test_free_text_scores_are_logged_as_scores_not_accuracy() -> None:
    metrics = cross_test_metrics(result("locomo", {"token_f1": 4, "choice": 1}))
    assert metrics == {"cross_locomo_seed_score": 0.25, "cross_locomo_best_score": 0.5}
    assert not any(name.endswith("accuracy") for name in metrics)
