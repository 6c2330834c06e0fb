"""A user's latent world: which variables and values exist, the questions, and how the state evolves.

Everything is drawn from one ``random.Random`` in a fixed order over lists (never sets), so a seed fully
determines the result.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from memevo.core.errors import UserInputError
from memevo.environments.amemgym.synth.config import SynthConfig
from memevo.environments.amemgym.synth.vocabulary import EventText, ValueText, Variable, Vocabulary


@dataclass(frozen=True)
class QuestionPlan:
    text: str
    variables: list[str]


@dataclass(frozen=True)
class Event:
    """One life event of an update period and the variables it changes."""

    variables: list[str]
    texts: list[EventText]


@dataclass
class World:
    """The latent side of one user: schema, questions, states per period and the events behind changes."""

    variables: dict[str, Variable]
    schema: dict[str, list[ValueText]]
    questions: list[QuestionPlan]
    states: list[dict[str, str]]
    events: list[list[Event]]

    def value_text(self, variable: str, value: str) -> ValueText:
        return next(option for option in self.schema[variable] if option.value == value)


def plan_world(rng: random.Random, vocabulary: Vocabulary, config: SynthConfig) -> World:
    """Draw schema, questions and the state trajectory for one user."""
    questions = _plan_questions(rng, vocabulary, config)
    needed = {name for question in questions for name in question.variables}
    variables = {v.name: v for v in vocabulary.variables if v.name in needed}
    schema = {}
    for name, variable in variables.items():
        if config.choices_per_state > len(variable.values):
            raise UserInputError(f"variable {name!r} has only {len(variable.values)} values",
                                 field="choices_per_state")
        picked = rng.sample(range(len(variable.values)), config.choices_per_state)
        schema[name] = [variable.values[index] for index in sorted(picked)]
    states = [{name: rng.choice(options).value for name, options in schema.items()}]
    events: list[list[Event]] = [[]]
    counts = dict.fromkeys(schema, 0)
    for _ in range(config.periods):
        state, period_events = _evolve(rng, schema, variables, states[-1], counts, config.changes_per_period)
        states.append(state)
        events.append(period_events)
    return World(variables=variables, schema=schema, questions=questions, states=states, events=events)


def _plan_questions(rng: random.Random, vocabulary: Vocabulary, config: SynthConfig) -> list[QuestionPlan]:
    if config.questions > len(vocabulary.variables):
        raise UserInputError(f"at most {len(vocabulary.variables)} questions per user with this vocabulary",
                             field="questions")
    plans = []
    for main in rng.sample(vocabulary.variables, config.questions):
        extra = config.states_per_question - 1
        if extra > len(main.related):
            raise UserInputError(f"variable {main.name!r} has only {len(main.related)} related variables",
                                 field="states_per_question")
        text = rng.choice(main.questions)
        plans.append(QuestionPlan(text=text, variables=[main.name, *rng.sample(main.related, extra)]))
    return plans


def _evolve(rng: random.Random, schema: dict[str, list[ValueText]], variables: dict[str, Variable],
            state: dict[str, str], counts: dict[str, int], target: int) -> tuple[dict[str, str], list[Event]]:
    """One update period: change about ``target`` variables, favouring rarely changed ones (as B's soft cap)."""
    n_changes = min(len(schema), rng.randint(max(1, target - 1), target + 1))
    ranked = sorted(schema, key=lambda name: counts[name] + 2 * rng.random())
    changed = ranked[:n_changes]
    new_state = dict(state)
    for name in changed:
        new_state[name] = rng.choice([option.value for option in schema[name] if option.value != state[name]])
        counts[name] += 1
    rng.shuffle(changed)
    events = []
    while changed:
        size = min(len(changed), rng.choice((1, 2)))
        group, changed = changed[:size], changed[size:]
        events.append(Event(variables=group, texts=[rng.choice(variables[name].events) for name in group]))
    return new_state, events


def initial_groups(rng: random.Random, names: list[str], sessions: int | None) -> list[list[str]]:
    """Split the variables over period-0 sessions, 1-3 per session, every variable at least once."""
    count = sessions if sessions is not None else math.ceil(len(names) / 2)
    if count * 3 < len(names):
        raise UserInputError(f"{count} sessions cannot reveal {len(names)} variables at 3 per session",
                             field="sessions_init")
    shuffled = list(names)
    rng.shuffle(shuffled)
    groups: list[list[str]] = [[name] for name in shuffled[:count]]
    for name in shuffled[count:]:
        rng.choice([group for group in groups if len(group) < 3]).append(name)
    for _ in range(count - len(groups)):
        groups.append([rng.choice(names)])
    rng.shuffle(groups)
    return groups
