"""Metrics of AMemGym (F): accuracy, random baseline, upper bound, memory score, failure split; and
MemGym's memory-isolated (no-memory) baseline."""

from memevo.environments.metrics.baseline import gold_state, random_baseline
from memevo.environments.metrics.failure import (
    DEFAULT_MIN_PROBE_COVERAGE,
    FailureSplit,
    ProbeCoverage,
    failure_split,
    probe_coverage,
    question_failure,
    write_position,
)
from memevo.environments.metrics.no_memory import NO_MEMORY_FILE, NoMemoryEntry, NoMemoryTable, compute_no_memory
from memevo.environments.metrics.scores import (
    Cell,
    PeriodScores,
    Scores,
    ScoreSummary,
    UserScores,
    score_episodes,
    user_scores,
)
from memevo.environments.metrics.upper_bound import (
    UPPER_BOUND_FILE,
    UpperBoundEntry,
    UpperBoundTable,
    compute_upper_bound,
)

__all__ = [
    "DEFAULT_MIN_PROBE_COVERAGE",
    "NO_MEMORY_FILE",
    "UPPER_BOUND_FILE",
    "Cell",
    "FailureSplit",
    "NoMemoryEntry",
    "NoMemoryTable",
    "PeriodScores",
    "ProbeCoverage",
    "ScoreSummary",
    "Scores",
    "UpperBoundEntry",
    "UpperBoundTable",
    "UserScores",
    "compute_no_memory",
    "compute_upper_bound",
    "failure_split",
    "gold_state",
    "probe_coverage",
    "question_failure",
    "random_baseline",
    "score_episodes",
    "user_scores",
    "write_position",
]
