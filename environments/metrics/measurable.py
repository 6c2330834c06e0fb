"""When a memory score can be measured at all, and when a model's answers say nothing about its memory.

A memory score divides by ``upper bound - random``. On a handful of questions an upper bound a little above
random is as likely to be luck as skill, and dividing by it turns noise into a score of any size. So a score
is reported only when the upper bound's own sample supports it: the one-sided 95% Wilson lower bound of the
upper bound's accuracy over the questions behind it must lie above the random baseline. Wilson's interval
stays honest at accuracies of 0 or 1 and on a few questions, where the normal approximation does not.

An upper bound whose replies are too often unreadable is no upper bound (unread replies count as wrong and
pull it towards zero, which inflates every ratio); past ``MAX_UPPER_BOUND_UNREADABLE`` it is not used.

An answer-position collapse (one option position chosen for nearly every question, whatever the question)
is named separately: such a model's accuracy measures the share of gold answers in that position.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

WILSON_Z = 1.6448536269514722
"""One-sided 95%: the standard normal quantile at 0.95."""

MAX_UPPER_BOUND_UNREADABLE = 0.2
"""Largest share of unreadable upper-bound replies for which it is still taken as an upper bound."""

COLLAPSE_SHARE = 0.8
"""An answer position chosen at least this often (over ``COLLAPSE_MIN_ANSWERS`` answers or more) is a collapse."""

COLLAPSE_MIN_ANSWERS = 10

NOT_MEASURABLE = "memory cannot be measured with this model on this data"


def wilson_lower(successes: float, n: int, z: float = WILSON_Z) -> float:
    """Lower end of the Wilson score interval for a proportion (``successes`` may be a weighted count)."""
    if n <= 0:
        return 0.0
    p = successes / n
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, (centre - spread) / (1 + z * z / n))


def memory_not_measurable(*, n_questions: int, upper_bound: float | None, random_baseline: float,
                          upper_bound_unreadable: float | None) -> str | None:
    """Why no memory score can be given for these questions (None: it can). The reason is a full phrase
    that follows "n/a" in every place a memory score is shown."""
    if upper_bound is None:
        return "no upper bound was computed (set upper_bound: true or pass --upper-bound)"
    if upper_bound_unreadable is not None and upper_bound_unreadable > MAX_UPPER_BOUND_UNREADABLE:
        return (f"upper bound unreadable: {upper_bound_unreadable:.0%} of its replies named no option, over the "
                f"{MAX_UPPER_BOUND_UNREADABLE:.0%} it may have")
    lower = wilson_lower(upper_bound * n_questions, n_questions)
    if lower <= random_baseline:
        return (f"upper bound {upper_bound:.3f} not above random {random_baseline:.3f} over {n_questions} "
                f"questions (95% lower bound {lower:.3f}): {NOT_MEASURABLE}")
    return None


def position_collapse(choices: Iterable[int | None]) -> str | None:
    """A sentence naming an answer-position collapse in these parsed choices, or None when there is none."""
    readable = [choice for choice in choices if choice is not None]
    if len(readable) < COLLAPSE_MIN_ANSWERS:
        return None
    position, count = Counter(readable).most_common(1)[0]
    if count < COLLAPSE_SHARE * len(readable):
        return None
    return (f"answer-position collapse: {count} of {len(readable)} answers are option {position}, so accuracy "
            f"measures how often the gold answer is option {position}")
