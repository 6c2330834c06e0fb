"""One-line summaries of ``Scores`` that say which memory score is which and what each rests on, and the
flat metrics a tracker logs beside them.

Used by ``memevo eval`` and by every report that prints scores, so the wording is the same everywhere.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

from memevo.environments.answering import ANSWER_MODE_TEXT
from memevo.environments.metrics import PeriodScores, Scores, ScoreSummary
from memevo.environments.records import SCORING_NAMES

if TYPE_CHECKING:
    from memevo.environments.protocol import Environment

FigureName = Literal["accuracy", "score"]


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


MEMORY_SCORE_SCALE = "0 = random guessing, 1 = the model's perfect-information upper bound"


def memory_score_text(scores: ScoreSummary) -> str:
    """The pooled memory score and AMemGym's mean of per-cell ratios beside it with the cells it rests on, or
    n/a with the reason (no upper bound, or one not measurably above random)."""
    if scores.memory_na_reason is not None or scores.pooled_memory_score is None:
        return f"memory score n/a ({scores.memory_na_reason or 'no upper bound above random'})"
    cells = scores.n_memory_points + scores.n_excluded
    rests = f"{scores.n_memory_points}/{cells} cells"
    if scores.n_inverted:
        rests += f", {scores.n_inverted} with upper bound below random"
    return (f"memory score {_explained(scores.pooled_memory_score)} "
            f"(AMemGym's mean of cell ratios {_explained(scores.memory_score)}, {rests})")


def _explained(value: float | None) -> str:
    if value is not None and value < 0:
        return f"{value:.3f} (below random guessing; {MEMORY_SCORE_SCALE})"
    return _num(value)


def failure_cell(scores: Scores) -> str:
    """The split as a table cell, or why there is none: undiagnosed, or diagnosed with too few readable probes."""
    failure, probes = scores.failure, scores.probes
    if failure is not None:
        return f"{failure.write:.3f} / {failure.read:.3f} / {failure.utilization:.3f}"
    if probes is None:
        return "n/a (no diagnosis; set episode.diagnose: true)"
    return f"n/a (probe coverage {probes.coverage:.0%})"


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


def free_text(scores: Scores) -> bool:
    """Whether any question was scored on its text, so the headline figure is a mean credit, not a share right."""
    return any(method != "choice" for method in scores.scoring)


def figure_name(*, multiple_choice: bool) -> FigureName:
    """What metric names call the headline figure (``val_accuracy``, ``cross_locomo_seed_score``): ``accuracy``, the
    share right, when every question is multiple choice; ``score``, a mean of per-question credit, otherwise."""
    return "accuracy" if multiple_choice else "score"


def data_figure_name(environment: Environment[Any], items: Iterable[Any]) -> FigureName:
    """``figure_name`` of every question ``environment`` asks of ``items``: decided once per run from its data, so a
    split or a candidate that happened to meet only multiple-choice questions logs under the run's one name."""
    return figure_name(multiple_choice=all(
        question.multiple_choice for item in items for period in range(environment.n_periods(item))
        for question in environment.questions(item, period)))


CREDIT_KEYS: dict[str, str] = {"token_f1": "f1", "llm_judge": "judge", "exact_match": "exact_match",
                               "substring_match": "substring", "recall": "recall"}
"""How a metric key names each free-text credit (``CREDIT_NAMES`` in the words a key may hold), in a fixed order."""


def figure_key(methods: Iterable[str]) -> str:
    """The headline figure's name in metric keys (MLflow's, Optuna's), which hold no spaces or parentheses: ``accuracy``
    when every answer is scored by choice, else ``score_`` and the free-text credits behind it, as ``figure_label``
    names them (``score_f1``, ``score_judge``, ``score_f1_substring``)."""
    used = set(methods)
    credits = [key for method, key in CREDIT_KEYS.items() if method in used]
    return "score_" + "_".join(credits) if credits else "accuracy"


def data_figure_key(environment: Environment[Any], items: Iterable[Any]) -> str:
    """``figure_key`` of every question ``environment`` asks of ``items``: decided once per run from its data, so a
    split or a candidate that happened to meet only some kinds of question logs under the run's one name."""
    return figure_key(question.scoring for item in items for period in range(environment.n_periods(item))
                      for question in environment.questions(item, period))


def scored_figure_key(*scores: Scores) -> str:
    """``figure_key`` of the answers behind ``scores``: one name for all of them, so scores of the same items are
    logged under one name."""
    return figure_key(method for each in scores for method in each.scoring)


CREDIT_NAMES = {"token_f1": "F1", "llm_judge": "judge", "exact_match": "exact match",
                "substring_match": "substring", "recall": "recall"}
"""How a figure's label names the free-text credit behind it: ``score (F1)``, ``score (judge)``."""


def figure_label(scores: Scores) -> str:
    """The headline figure's name: ``accuracy`` only when every question is multiple choice, else ``score`` with the
    free-text credits behind it, e.g. ``score (F1)`` or ``score (F1, judge)``."""
    if not free_text(scores):
        return "accuracy"
    credits = [CREDIT_NAMES.get(method, method) for method in scores.scoring if method != "choice"]
    return f"score ({', '.join(dict.fromkeys(credits))})"


def headline_figure(scores: Scores) -> str:
    """The headline figure named as what it is: accuracy (share right), or a score with its per-question credit."""
    if free_text(scores):
        return f"{figure_label(scores)} {scores.accuracy:.3f} ({scores.score_meaning}; "
    return f"accuracy {scores.accuracy:.3f} ("


def answers_text(scores: Scores) -> str | None:
    """How the answers were given and scored; None when a summary has nothing to say (older records)."""
    mode = None if scores.answer_mode is None else ANSWER_MODE_TEXT.get(scores.answer_mode, scores.answer_mode)
    if not free_text(scores):
        return None if mode is None else f"answers: {mode}"
    methods = ", ".join(f"{SCORING_NAMES.get(method, method)} ({n} q)" for method, n in scores.scoring.items()
                        if method != "choice")
    text = f"answers: free text, scored by {methods}"
    choices = scores.scoring.get("choice")
    if choices:
        text += f"; multiple-choice questions ({choices} q) answered by {mode or 'n/a (not recorded)'}"
    return text


def benchmark_averages_text(scores: Scores) -> str | None:
    """The mean over categories and the abstention questions' score, where the benchmark reports them."""
    parts = []
    if scores.category_mean is not None:
        parts.append(f"task-averaged {scores.category_mean:.3f} (mean of {len(scores.per_category)} categories' "
                     "scores)")
    if scores.abstention is not None:
        parts.append(f"abstention {scores.abstention.accuracy:.3f} ({scores.abstention.n_questions} q)")
    return ", ".join(parts) or None


def score_lines(scores: Scores, width: int = 100) -> list[str]:
    """Every headline figure of a set of scores, a few short lines (wrapped at ``width``, never cut)."""
    random = "n/a (free-text answers)" if scores.random_baseline is None else f"{scores.random_baseline:.3f}"
    first = f"{headline_figure(scores)}random {random}"
    if scores.upper_bound is not None:
        first += f", upper bound {scores.upper_bound:.3f}"
    if scores.no_memory_accuracy is not None and scores.memory_gain is not None:
        first += f", no-memory accuracy {scores.no_memory_accuracy:.3f}, memory gain {scores.memory_gain:+.3f}"
    lines = [first + ")", memory_score_text(scores)]
    if scores.answer_collapse is not None:
        lines.append(f"note: {scores.answer_collapse}")
    failure = failure_text(scores)
    if failure is not None:
        lines.append(failure)
    errors = [f"format errors {scores.format_error_rate:.1%}"]
    if scores.upper_bound_format_error_rate is not None:
        errors.append(f"upper-bound format errors {scores.upper_bound_format_error_rate:.1%}")
    if scores.write_requests is not None:
        errors.append(f"memory-write failures {scores.write_failures}/{scores.write_requests}")
    lines.append(", ".join(errors))
    answers = answers_text(scores)
    if answers is not None:
        lines.append(answers)
    if scores.per_category:
        lines.append(f"per category ({figure_label(scores)}): " + ", ".join(
            f"{c.category} {c.accuracy:.3f} ({c.n_questions} q)" for c in scores.per_category))
    averages = benchmark_averages_text(scores)
    if averages is not None:
        lines.append(averages)
    return [part for line in lines
            for part in textwrap.wrap(line, width, subsequent_indent="    ", break_on_hyphens=False)]


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
