"""The English of synthetic data: opening queries, small talk, event texts and personalised answers.

A query reveals a value only through one of that value's hand-written phrasings; greetings, small
talk, requests and event mentions are written so they name no value. That is what makes the exposure
exact and checkable (tests look for the phrasings).
"""

from __future__ import annotations

import random

from memevo.environments.amemgym.synth.vocabulary import QueryParts, ValueText, Variable


def filler(rng: random.Random, parts: QueryParts, count: int) -> list[str]:
    """``count`` small-talk sentences that carry no state."""
    return [
        ", ".join((rng.choice(parts.filler_openers), rng.choice(parts.filler_activities),
                   rng.choice(parts.filler_comments))) + "."
        for _ in range(count)
    ]


def opening_query(rng: random.Random, parts: QueryParts, exposures: list[tuple[Variable, ValueText]],
                  mentions: list[str], filler_count: int, *, name_values: bool = False) -> str:
    """Greeting, for each exposed value what changed (its mention, if any) and one phrasing, small talk, then
    a request. ``name_values`` states each value in its own words instead of the phrasing drawn (drawn all the
    same, so every later draw, and with it the rest of the world, stays as without it)."""
    sentences = [rng.choice(parts.greetings)] if rng.random() < 0.6 else []
    for position, (variable, value) in enumerate(exposures):
        if position < len(mentions):
            sentences.append(mentions[position])
        phrasing = rng.choice(value.phrasings)
        sentences.append(stated_value(variable, value) if name_values else phrasing)
    sentences.extend(filler(rng, parts, filler_count))
    sentences.append(rng.choice(exposures[0][0].requests))
    return " ".join(sentences)


def stated_value(variable: Variable, value: ValueText) -> str:
    """A value in the words the answer options use, under its variable's name ("My diet style: vegetarian.")."""
    return f"My {variable.name.replace('_', ' ')}: {value.value}."


def answer(values: list[ValueText], *, name_values: bool = False) -> str:
    """Advice that fits exactly this combination of values, one sentence per value; ``name_values`` opens it with
    the values it fits ("For running outdoors three times a week: ...")."""
    advice = " ".join(value.advice for value in values)
    if not name_values:
        return advice
    return f"For {' and '.join(value.value for value in values)}: {advice}"
