"""Metric names say what the headline figure is: accuracy where every question is multiple choice (AMemGym's names
stay as they were), score where free text is scored; the cross-benchmark test's names, and the run's, decided from
its data."""

from __future__ import annotations

import pytest

from memevo.environments.amemgym.environment import AMemGymEnvironment
from memevo.environments.metrics import Scores
from memevo.environments.runner import EpisodeConfig
from memevo.environments.score_text import data_figure_key, data_figure_name, figure_key
from memevo.evolve.cross_test import CrossTestResult, cross_test_metrics
from tests.doubles.category_backend import category_world
from tests.doubles.replay_environment import TinyReplayEnvironment, tiny_items


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
    assert metrics == {"cross_locomo_seed_score_f1": 0.25, "cross_locomo_best_score_f1": 0.5}
    assert not any(name.endswith("accuracy") for name in metrics)


def test_seed_and_best_are_named_alike_when_one_of_them_met_free_text() -> None:
    mixed = CrossTestResult(environment="locomo", data="data.json", seed_id="seed", best_id="best",
                            seed_scores=scores(0.25, {"choice": 5}),
                            best_scores=scores(0.5, {"token_f1": 4, "choice": 1}))
    assert cross_test_metrics(mixed) == {"cross_locomo_seed_score_f1": 0.25, "cross_locomo_best_score_f1": 0.5}


def test_a_run_names_its_figure_from_every_question_of_its_data() -> None:
    episode = EpisodeConfig()
    assert data_figure_name(AMemGymEnvironment(episode), category_world(3, 2)) == "accuracy"
    replay, items = TinyReplayEnvironment(episode), tiny_items(3)
    assert data_figure_name(replay, items) == "score"  # free text and one multiple-choice question each
    choice_only = [item.model_copy(update={"questions": [q for q in item.questions if q.choices is not None]})
                   for item in items]
    assert data_figure_name(replay, choice_only) == "accuracy"
    assert data_figure_name(replay, [*choice_only, items[0]]) == "score"  # one user's free text names the run's


def test_metric_keys_name_the_credit_in_one_order_whatever_the_questions_order() -> None:
    episode = EpisodeConfig()
    assert data_figure_key(AMemGymEnvironment(episode), category_world(3, 2)) == "accuracy"
    replay, items = TinyReplayEnvironment(episode), tiny_items(3)
    assert data_figure_key(replay, items) == "score_f1_exact_match"  # F1 first, as every key orders them
    choice_only = [item.model_copy(update={"questions": [q for q in item.questions if q.choices is not None]})
                   for item in items]
    assert data_figure_key(replay, choice_only) == "accuracy"
    assert figure_key(["llm_judge", "choice", "token_f1"]) == figure_key(["token_f1", "llm_judge"]) == "score_f1_judge"
    assert figure_key([]) == "accuracy"  # a record written before scoring was counted
