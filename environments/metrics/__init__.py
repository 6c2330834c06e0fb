"""Metrics of AMemGym (F): accuracy, random baseline, upper bound, memory score, failure split."""

from memevo.environments.metrics.baseline import gold_state, random_baseline
from memevo.environments.metrics.failure import FailureSplit, failure_split, question_failure, write_position
from memevo.environments.metrics.scores import Cell, PeriodScores, Scores, UserScores, score_episodes, user_scores
from memevo.environments.metrics.upper_bound import (
    UPPER_BOUND_FILE,
    UpperBoundEntry,
    UpperBoundTable,
    compute_upper_bound,
)

__all__ = [
    "UPPER_BOUND_FILE",
    "Cell",
    "FailureSplit",
    "PeriodScores",
    "Scores",
    "UpperBoundEntry",
    "UpperBoundTable",
    "UserScores",
    "compute_upper_bound",
    "failure_split",
    "gold_state",
    "question_failure",
    "random_baseline",
    "score_episodes",
    "user_scores",
    "write_position",
]
