"""The procedural generator: AMemGym-shaped items from a seed, with no LLM."""

from __future__ import annotations

import datetime as dt
import itertools
import random

from memevo.environments.amemgym.data.models import AnswerChoice, Item, Period, Question, Session, StateUpdate
from memevo.environments.amemgym.synth.config import SynthConfig
from memevo.environments.amemgym.synth.profile import first_name, make_profile
from memevo.environments.amemgym.synth.simulator_parts import DEFAULT_VOCABULARY
from memevo.environments.amemgym.synth.timeline import DATE_FORMAT, period_bounds, session_times
from memevo.environments.amemgym.synth.vocabulary import Vocabulary, load_vocabulary
from memevo.environments.amemgym.synth.world import World, initial_groups, plan_world
from memevo.environments.amemgym.synth.writing import answer, opening_query


def synthesize(config: SynthConfig) -> list[Item]:
    """``config.users`` items; each user draws from its own generator seeded from ``config.seed``."""
    vocabulary = load_vocabulary(config.vocabulary or DEFAULT_VOCABULARY)
    master = random.Random(config.seed)
    return [_make_item(random.Random(master.getrandbits(64)), vocabulary, config) for _ in range(config.users)]


def _make_item(rng: random.Random, vocabulary: Vocabulary, config: SynthConfig) -> Item:
    profile = make_profile(rng, vocabulary.profile)
    world = plan_world(rng, vocabulary, config)
    start = dt.datetime.strptime(config.start_date, DATE_FORMAT).date()
    bounds = period_bounds(start, config.periods, config.months_per_period)
    totals = {name: sum(before[name] != after[name] for before, after in itertools.pairwise(world.states))
              for name in world.schema}
    periods = [
        _make_period(rng, vocabulary, config, world, index, bounds[index], totals, first_name(profile))
        for index in range(len(world.states))
    ]
    return Item(
        id=profile.uuid,
        start_time=config.start_date,
        user_profile=profile,
        state_schema={name: [option.value for option in options] for name, options in world.schema.items()},
        periods=periods,
        qas=[_make_question(rng, world, config, plan_index) for plan_index in range(len(world.questions))],
    )


def _make_period(rng: random.Random, vocabulary: Vocabulary, config: SynthConfig, world: World, index: int,
                 bounds: tuple[dt.date | None, dt.date], totals: dict[str, int], name: str) -> Period:
    state = world.states[index]
    plans: list[tuple[str | None, list[str], list[str]]]  # (event text, variables, mentions) per session
    if index == 0:
        groups = initial_groups(rng, list(world.schema), config.sessions_init)
        plans = [(None, group, []) for group in groups]
        updates = {key: StateUpdate(old=None, new=value) for key, value in state.items()}
        summary = None
    else:
        before = world.states[index - 1]
        events = world.events[index]
        texts = [" ".join(t.event.format(name=name) for t in event.texts) for event in events]
        plans = [(text, event.variables, [t.mention for t in event.texts]) for text, event in zip(texts, events, strict=True)]
        updates = {key: StateUpdate(old=before[key], new=state[key])
                   for key in world.schema if before[key] != state[key]}
        summary = " ".join(texts)
    times = session_times(rng, len(plans), bounds[1])
    sessions = []
    for (event, variables, mentions), time in zip(plans, times, strict=True):
        exposures = [(world.variables[key], world.value_text(key, state[key])) for key in variables]
        query = opening_query(rng, vocabulary.queries, exposures, mentions, config.filler_sentences,
                              name_values=config.users_name_values)
        sessions.append(Session(event=event, exposed_states={key: state[key] for key in variables}, query=query,
                                messages=[], session_time=time))
    return Period(
        period_start=bounds[0].strftime(DATE_FORMAT) if bounds[0] else None,
        period_end=bounds[1].strftime(DATE_FORMAT),
        period_summary=summary,
        sessions=sessions,
        state=dict(state),
        updates=updates,
        update_cnts=dict(totals),
    )


def _make_question(rng: random.Random, world: World, config: SynthConfig, plan_index: int) -> Question:
    """Choices: every visited value tuple, padded with unvisited ones to ``min_state_variants``, shuffled."""
    plan = world.questions[plan_index]
    visited: list[tuple[str, ...]] = []
    for state in world.states:
        combo = tuple(state[key] for key in plan.variables)
        if combo not in visited:
            visited.append(combo)
    unvisited = [combo for combo in itertools.product(*([o.value for o in world.schema[key]] for key in plan.variables))
                 if combo not in visited]
    padding = rng.sample(unvisited, min(len(unvisited), max(0, config.min_state_variants - len(visited))))
    tuples = [(combo, "experience") for combo in visited] + [(combo, "random") for combo in padding]
    rng.shuffle(tuples)
    choices = [
        AnswerChoice(state=list(combo), type=kind,
                     answer=answer([world.value_text(k, v) for k, v in zip(plan.variables, combo, strict=True)],
                                   name_values=config.answers_name_values))
        for combo, kind in tuples
    ]
    return Question(query=plan.text, required_info=list(plan.variables), answer_choices=choices)
