"""The random baseline (AMemGym F.3): expected accuracy of a uniformly random choice."""

from __future__ import annotations

from memevo.environments.amemgym.data.models import Item


def gold_state(item: Item, period: int, question_index: int) -> list[str]:
    """The required states' true values at the end of ``period``, in ``required_info`` order."""
    state = item.periods[period].state
    return [state[key] for key in item.qas[question_index].required_info]


def random_baseline(item: Item, period: int, question_index: int) -> float:
    """Mean over choices of exact-match accuracy against the gold state (1/n when states are unique)."""
    target = gold_state(item, period, question_index)
    choices = item.qas[question_index].answer_choices
    return sum(choice.state == target for choice in choices) / len(choices)
