"""Stages C.5 (initial state), C.6 (state updates per period) and C.7 (event elaboration).

The JSON schemas already restrict values to the schema's choices (and, for updates, to values that
differ from the current one on variables still under ``max_changes_per_state``); the validators
check the same rules again so any client, schema-aware or not, is held to them.
"""

from __future__ import annotations

from typing import Any

from memevo.agents.llm.protocol import ChatClient
from memevo.environments.amemgym.generation.ask import (
    StageError,
    array_schema,
    ask_json,
    dumps,
    object_schema,
    prompt,
    string_schema,
)
from memevo.environments.amemgym.generation.config import GenerationConfig

Schema = dict[str, list[str]]
State = dict[str, str]


def _system(task: str) -> str:
    return f"You simulate how a person's life evolves over time. {task} Reply with JSON."


async def initial_state(llm: ChatClient, profile: dict[str, Any], schema: Schema, config: GenerationConfig) -> State:
    """C.5: one value per variable, plausible for the profile."""
    json_schema = object_schema({"state": object_schema({name: {"enum": values} for name, values in schema.items()})})

    def problems(parsed: Any) -> list[str]:
        state = parsed.get("state") if isinstance(parsed, dict) else None
        if not isinstance(state, dict):
            return ["reply must be an object with a 'state' object"]
        issues = [f"missing variable {name!r}" for name in schema if name not in state]
        issues += [f"unknown variable {name!r}" for name in state if name not in schema]
        issues += [f"{name!r}: {value!r} is not one of {schema[name]}" for name, value in state.items()
                   if name in schema and value not in schema[name]]
        return issues

    messages = prompt(
        _system("Choose the starting situation."),
        (
            f"User profile:\n{profile['formatted_str']}\n\nVariables and their possible values:\n{dumps(schema)}\n\n"
            f"Pick each variable's value on {config.start_date}, consistent with the profile; prefer values that "
            'leave room to change in either direction. Return {"state": {variable: value}}.'
        ),
    )
    parsed = await ask_json(
        llm, messages, stage="initial_state", schema=json_schema, validate=problems,
        temperature=config.low_temperature, repair_turns=config.repair_turns,
    )
    return {name: parsed["state"][name] for name in schema}


def update_problems(
    parsed: Any, schema: Schema, current: State, counts: dict[str, int], config: GenerationConfig
) -> list[str]:
    """C.6 rules: change count in [n-1, n+1], known variables, valid and different values, cap per variable."""
    updated = parsed.get("updated") if isinstance(parsed, dict) else None
    summary = parsed.get("period_summary") if isinstance(parsed, dict) else None
    if not isinstance(updated, dict) or not isinstance(summary, str) or not summary.strip():
        return ["reply must be an object with a 'period_summary' text and an 'updated' object"]
    n = config.num_changes_per_period
    issues = []
    if not n - 1 <= len(updated) <= n + 1:
        issues.append(f"change between {max(n - 1, 0)} and {n + 1} variables, not {len(updated)}")
    for name, value in updated.items():
        if name not in schema:
            issues.append(f"unknown variable {name!r}")
        elif value not in schema[name]:
            issues.append(f"{name!r}: {value!r} is not one of {schema[name]}")
        elif value == current[name]:
            issues.append(f"{name!r} is already {value!r}; an update must change the value")
        elif counts[name] >= config.max_changes_per_state:
            issues.append(f"{name!r} has already changed {counts[name]} times (limit {config.max_changes_per_state})")
    return issues


async def state_update(
    llm: ChatClient,
    profile: dict[str, Any],
    schema: Schema,
    current: State,
    history: list[dict[str, Any]],
    counts: dict[str, int],
    bounds: tuple[str | None, str],
    step: int,
    config: GenerationConfig,
) -> dict[str, Any]:
    """C.6: which variables change during one period, and why."""
    open_vars = {name: [v for v in values if v != current[name]] for name, values in schema.items()
                 if counts[name] < config.max_changes_per_state}
    n = config.num_changes_per_period
    if len(open_vars) < max(n - 1, 1):
        raise StageError(f"state_update_p{step:02d}", f"only {len(open_vars)} variables are under the change limit "
                         f"{config.max_changes_per_state}; raise max_changes_per_state or lower num_changes_per_period")
    json_schema = object_schema(
        {"period_summary": string_schema(),
         "updated": object_schema({name: {"enum": values} for name, values in open_vars.items()}, required=[])}
    )
    past = "\n".join(f"- {record['period_start']} to {record['period_end']}: {record['period_summary']}" for record in history)
    messages = prompt(
        _system("Decide what changes in the next period."),
        (
            f"User profile:\n{profile['formatted_str']}\n\nVariables and possible values:\n{dumps(schema)}\n"
            f"Current values:\n{dumps(current)}\nTimes each variable has changed so far: {dumps(counts)}\n"
            f"Earlier periods:\n{past or '- none'}\n\n"
            f"Period {step} of {config.num_periods} runs from {bounds[0]} to {bounds[1]}. Change about {n} "
            f"variables (between {max(n - 1, 0)} and {n + 1}) in a realistic way, each to a different valid value. "
            f"Never change a variable that already changed {config.max_changes_per_state} times; prefer variables "
            'that changed less. Return {"period_summary": why these changes happen, "updated": {variable: new value}}.'
        ),
    )
    parsed = await ask_json(
        llm, messages, stage=f"state_update_p{step:02d}", schema=json_schema,
        validate=lambda reply: update_problems(reply, schema, current, counts, config),
        temperature=config.high_temperature, repair_turns=config.repair_turns,
    )
    return {
        "period_start": bounds[0],
        "period_end": bounds[1],
        "period_summary": parsed["period_summary"].strip(),
        "updated": parsed["updated"],
        "old": {name: current[name] for name in parsed["updated"]},
    }


def event_problems(parsed: Any, updated: State) -> list[str]:
    """Each changed variable must be explained by exactly one event; events cover nothing else."""
    events = parsed.get("events") if isinstance(parsed, dict) else None
    if not isinstance(events, list) or not events:
        return ["reply must be an object with a non-empty 'events' list"]
    issues = []
    covered: list[str] = []
    for index, event in enumerate(events, start=1):
        states = event.get("states") if isinstance(event, dict) else None
        text = event.get("event") if isinstance(event, dict) else None
        if not isinstance(states, list) or not states or not isinstance(text, str) or not text.strip():
            issues.append(f"event {index}: needs a non-empty 'states' list and an 'event' text")
            continue
        issues += [f"event {index}: {name!r} did not change this period" for name in states if name not in updated]
        covered += states
    issues += [f"{name!r} must be explained by exactly one event" for name in updated if covered.count(name) != 1]
    return issues


async def elaborate_events(
    llm: ChatClient, profile: dict[str, Any], record: dict[str, Any], step: int, config: GenerationConfig
) -> list[dict[str, Any]]:
    """C.7: life events that implicitly explain the period's changes, grouping related ones.

    A period without changes (allowed when ``num_changes_per_period`` is 1) has no events and no sessions.
    """
    updated = record["updated"]
    if not updated:
        return []
    changes = "\n".join(f"- {name}: {record['old'][name]} -> {value}" for name, value in updated.items())
    event = object_schema({"states": array_schema({"enum": list(updated)}, min_items=1), "event": string_schema()})
    messages = prompt(
        _system("Describe the life events behind changes."),
        (
            f"User profile:\n{profile['formatted_str']}\n\nBetween {record['period_start']} and {record['period_end']} "
            f"these facts changed ({record['period_summary']}):\n{changes}\n\n"
            "Write concrete life events that explain the changes without naming the new values outright. Group "
            "related changes into one event; every changed fact belongs to exactly one event, and no event may "
            'imply a change to any other fact. Return {"events": [{"states": [variable, ...], "event": str}]}.'
        ),
    )
    parsed = await ask_json(
        llm, messages, stage=f"events_p{step:02d}", schema=object_schema({"events": array_schema(event, min_items=1)}),
        validate=lambda reply: event_problems(reply, updated),
        temperature=config.low_temperature, repair_turns=config.repair_turns,
    )
    return [{"states": list(e["states"]), "event": e["event"].strip()} for e in parsed["events"]]
