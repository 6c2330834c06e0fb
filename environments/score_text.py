"""One-line summaries of ``Scores`` that say which memory score is which and what each rests on, and the
flat metrics a tracker logs beside them.

Used by ``memevo eval`` and by every report that prints scores, so the wording is the same everywhere.
"""

from __future__ import annotations

from memevo.environments.metrics import PeriodScores, Scores


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


MEMORY_SCORE_SCALE = "0 = random guessing, 1 = the model's perfect-information upper bound"


def memory_score_text(scores: Scores) -> str:
    """AMemGym's memory score with the cells it rests on, the pooled variant beside it, and why either is
    n/a or below zero."""
    if scores.upper_bound is None:
        return "memory score n/a (no upper bound was computed; set upper_bound: true or pass --upper-bound)"
    cells = scores.n_memory_points + scores.n_excluded
    rests = f"mean of {scores.n_memory_points} of {cells} (user, period) cells"
    if scores.n_excluded:
        rests += f", {scores.n_excluded} excluded as upper bound = random"
    if scores.n_inverted:
        rests += f", {scores.n_inverted} with upper bound below random"
    text = (f"memory score (AMemGym, {rests}) {_explained(scores.memory_score)}, "
            f"pooled memory score (sum over questions) {_pooled(scores)}")
    return text if scores.memory_score is not None else text + " [n/a: the upper bound equals random in every cell]"


def _pooled(scores: Scores) -> str:
    if scores.pooled_memory_score is None:
        return "n/a (the summed upper bound equals the summed random baseline)"
    return _explained(scores.pooled_memory_score)


def _explained(value: float | None) -> str:
    if value is not None and value < 0:
        return f"{value:.3f} (below random guessing; {MEMORY_SCORE_SCALE})"
    return _num(value)


def failure_text(scores: Scores) -> str | None:
    """The write/read/util split with its probe coverage, or why it is n/a; None when undiagnosed."""
    probes, split = scores.probes, scores.failure
    if probes is None:
        return None
    unread = f"{probes.probe_format_errors}/{probes.n_probes} probes unreadable"
    if split is None:
        return (f"write/read/util n/a (probe coverage {probes.coverage:.0%} of wrong answers, below "
                f"{probes.min_coverage:.0%}; {unread})")
    return (f"write/read/util {split.write:.3f}/{split.read:.3f}/{split.utilization:.3f} "
            f"(unattributed {split.unattributed:.3f}, probe coverage {probes.coverage:.0%}; {unread})")


def scores_line(scores: Scores) -> str:
    """Every headline figure of a set of scores, comma-separated."""
    parts = [f"accuracy {scores.accuracy:.3f}", f"random {scores.random_baseline:.3f}"]
    if scores.upper_bound is not None:
        parts.append(f"upper bound {scores.upper_bound:.3f}")
    parts.append(memory_score_text(scores))
    if scores.no_memory_accuracy is not None and scores.memory_gain is not None:
        parts.append(f"no-memory accuracy {scores.no_memory_accuracy:.3f} (memory gain {scores.memory_gain:+.3f})")
    failure = failure_text(scores)
    if failure is not None:
        parts.append(failure)
    if scores.write_requests is not None:
        parts.append(f"memory-write failures {scores.write_failures}/{scores.write_requests}")
    parts.append(f"format errors {scores.format_error_rate:.1%}")
    if scores.upper_bound_format_error_rate is not None:
        parts.append(f"upper-bound format errors {scores.upper_bound_format_error_rate:.1%}")
    return ", ".join(parts)


def extra_metrics(scores: Scores | PeriodScores) -> dict[str, float]:
    """The cells behind the memory score, the pooled score, the memory gain, probe coverage and memory-write
    failures, as flat numbers (absent ones are left out) for MLflow."""
    values: dict[str, float | None] = {
        "memory_cells_used": scores.n_memory_points if scores.upper_bound is not None else None,
        "memory_cells_excluded": scores.n_excluded if scores.upper_bound is not None else None,
        "pooled_memory_score": scores.pooled_memory_score,
        "no_memory_accuracy": scores.no_memory_accuracy,
        "memory_gain": scores.memory_gain,
        "memory_write_failure_rate": scores.write_failure_rate,
        "probe_coverage": None if scores.probes is None else scores.probes.coverage,
        "probe_format_error_rate": None if scores.probes is None else scores.probes.probe_format_error_rate,
        "unattributed_failure": None if scores.failure is None else scores.failure.unattributed,
    }
    return {name: float(value) for name, value in values.items() if value is not None}
