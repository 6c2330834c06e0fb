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
                  mentions: list[str], filler_count: int) -> str:
    """Greeting, for each exposed value what changed (its mention, if any) and one phrasing, small talk, then
    a request."""
    sentences = [rng.choice(parts.greetings)] if rng.random() < 0.6 else []
    for position, (_, value) in enumerate(exposures):
        if position < len(mentions):
            sentences.append(mentions[position])
        sentences.append(rng.choice(value.phrasings))
    sentences.extend(filler(rng, parts, filler_count))
    sentences.append(rng.choice(exposures[0][0].requests))
    return " ".join(sentences)


def answer(values: list[ValueText], *, name_values: bool = False) -> str:
    """Advice that fits exactly this combination of values, one sentence per value; ``name_values`` opens it with
    the values it fits ("For running outdoors three times a week: ...")."""
    advice = " ".join(value.advice for value in values)
    if not name_values:
        return advice
    return f"For {' and '.join(value.value for value in values)}: {advice}"
