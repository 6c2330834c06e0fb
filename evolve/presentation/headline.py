"""The lines a person reads at the end of an evolution: seed against best on the held-out test users.

They lead with the run's objective and its interval over the test users (the unit that varies), then the
paired difference, then the memory figures, which are n/a with their reason when the upper bound does not
measurably beat random. Each line is wrapped to a terminal's width; a figure is never cut.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from memevo.environments.answering import ANSWER_MODE_TEXT
from memevo.environments.metrics import Scores, UserScores
from memevo.environments.metrics.scores import CategoryScores
from memevo.environments.registry import DEFAULT_ENVIRONMENT, capabilities_of
from memevo.environments.score_text import MEMORY_SCORE_SCALE, FigureName, failure_text, figure_label, free_text
from memevo.evolve.api_outcomes import paired_on_test_users, user_values, user_weights
from memevo.evolve.config import Objective
from memevo.evolve.stats import fmt, fmt_interval, fmt_p, mean_ci
from memevo.evolve.weighting import weighted_contributions

WIDTH = 100
INDENT = "  "


def objective_label(objective: str, scores: Scores | None = None, *, figure: FigureName | None = None) -> str:
    """What an objective is called in text: the accuracy objective is a mean score named by its credit when some
    answers are free text (``score (F1)``), else the run's ``figure`` (``score`` when other users of the run met
    free text; ``accuracy`` by default); a run folder written before the rename says ``memory_score``, which
    decided on AMemGym's ratio."""
    if objective != "accuracy":
        return "AMemGym memory score"
    if scores is not None and free_text(scores):
        return figure_label(scores)
    return figure or "accuracy"


def objective_interval(objective: str, users: Sequence[UserScores]) -> str:
    """The t-interval over users of one candidate's objective, users weighted as ``user_weights`` says (so its mean
    is the pooled score), kept inside [0, 1] for accuracy (a score of a few users' questions cannot leave it;
    AMemGym's ratio has no bounds)."""
    values, weights = user_values(objective, users), user_weights(objective, users)
    ci = mean_ci(weighted_contributions(list(values.values()), [weights[user] for user in values]))
    return fmt_interval(ci.clipped(0.0, 1.0) if objective == "accuracy" else ci)


def _objective_line(objective: str, label: str, seed: Sequence[UserScores], best: Sequence[UserScores],
                    best_label: str) -> str:
    test = paired_on_test_users(objective, seed, best)
    p = "n/a" if test.t_p is None else fmt_p(test.t_p)
    low, high = test.diff_low, test.diff_high
    if objective == "accuracy" and low is not None and high is not None:  # AMemGym's ratio has no bounds
        low, high = max(low, -1.0), min(high, 1.0)
    seed_interval = objective_interval(objective, seed)
    best_interval = objective_interval(objective, best)
    return (f"{label}: seed {seed_interval} -> {best_label} {best_interval}; "
            f"{best_label} - seed {fmt(test.mean_diff)} [{fmt(low)}, {fmt(high)}], paired t p {p} over "
            f"{test.n} users" + (f" ({test.note})" if test.note else ""))


def _memory_line(seed: Scores, best: Scores, best_label: str) -> str:
    if seed.pooled_memory_score is None or best.pooled_memory_score is None:
        reason = seed.memory_na_reason or best.memory_na_reason or "no upper bound above random"
        return f"memory score: n/a ({reason})"
    return (f"memory score: seed {fmt(seed.pooled_memory_score)} -> {best_label} {fmt(best.pooled_memory_score)} "
            f"({MEMORY_SCORE_SCALE}; AMemGym's mean of cell ratios {fmt(seed.memory_score)} -> "
            f"{fmt(best.memory_score)})")


def _references_line(seed: Scores, best: Scores, best_label: str, *, amemgym: bool) -> str:
    parts = [f"random {fmt(seed.random_baseline)}", f"upper bound {fmt(seed.upper_bound)}"] if amemgym else []
    if seed.no_memory_accuracy is not None:
        parts.append(f"no-memory accuracy {fmt(seed.no_memory_accuracy)}")
    parts.append(f"format errors seed {seed.format_error_rate:.1%} -> {best_label} {best.format_error_rate:.1%}")
    if seed.answer_mode is not None:
        parts.append(f"answers {ANSWER_MODE_TEXT.get(seed.answer_mode, seed.answer_mode)}")
    return "references: " + ", ".join(parts)


def _diagnosis_lines(seed: Scores, best: Scores, best_label: str) -> list[str]:
    lines = []
    for label, scores in (("seed", seed), (best_label, best)):
        if scores.answer_collapse is not None:
            lines.append(f"note ({label}): {scores.answer_collapse}")
        failure = failure_text(scores)
        if failure is not None:
            lines.append(f"{label}: {failure}")
    return lines


def held_out_lines(objective: Objective | str, seed: Scores, best: Scores, seed_users: Sequence[UserScores],
                   best_users: Sequence[UserScores], *, best_label: str = "best",
                   environment: str = DEFAULT_ENVIRONMENT) -> list[str]:
    """The headline block: objective with intervals, paired difference, memory score, references, notes. The memory
    score, random guessing and the upper bound are AMemGym's figures: other environments name them once as absent."""
    memory_figures = capabilities_of(environment).memory_figures
    head = (f"held-out test: {seed.n_users} users, {seed.n_questions} questions; "
            "[95% t-intervals over users]")
    memory = (_memory_line(seed, best, best_label) if memory_figures else
              f"memory score: not measured on {environment} (it needs AMemGym's upper bound and random baseline)")
    body = [
        _objective_line(objective, objective_label(objective, seed), seed_users, best_users, best_label),
        memory,
        _references_line(seed, best, best_label, amemgym=memory_figures),
        *_diagnosis_lines(seed, best, best_label),
    ]
    wrapped = [head]
    for line in body:
        wrapped += textwrap.wrap(line, WIDTH, initial_indent=INDENT, subsequent_indent=INDENT * 3,
                                 break_on_hyphens=False)
    return wrapped


def held_out_line(objective: Objective | str, seed: Scores, best: Scores, *, best_label: str = "best",
                  figure: FigureName | None = None) -> str:
    """Seed against best in the objective on one short log line (the full block is ``held_out_lines``)."""
    pick = seed.accuracy if objective == "accuracy" else seed.memory_score
    other = best.accuracy if objective == "accuracy" else best.memory_score
    return f"test {objective_label(objective, seed, figure=figure)}: seed {fmt(pick)} -> {best_label} {fmt(other)}"


def _category_cell(scores: CategoryScores | None) -> str:
    return "n/a (not asked)" if scores is None else fmt(scores.accuracy)


def category_line(seed: Scores, best: Scores, *, best_label: str = "best", figure: FigureName | None = None) -> str | None:
    """Seed against best on the test users per benchmark category with its question count; None when the benchmark
    has no categories."""
    mine = {c.category: c for c in seed.per_category}
    theirs = {c.category: c for c in best.per_category}
    if not mine and not theirs:
        return None
    cells = [f"{name} {_category_cell(mine.get(name))} -> {_category_cell(theirs.get(name))} "
             f"({(mine.get(name) or theirs[name]).n_questions} q)" for name in {**mine, **theirs}]
    return f"test per category ({objective_label('accuracy', seed, figure=figure)}, seed -> {best_label}): " + \
        ", ".join(cells)
