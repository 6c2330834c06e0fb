"""Stages C.10 (initial queries) and C.11 (update queries), with the exposure and leakage checks.

Every opening query must pass two checks before it is accepted; a failing query is rewritten with
the problems spelled out, at most ``check_retries`` times, then the stage fails.

- Exposure (as in the reference): a judge that sees only the query text and the target variables'
  value lists must recover every target value.
- Leakage (missing in the reference, I.24): the query must not reveal the value a *non-target*
  variable holds at that time. Always: a verbatim check (a current value of a non-target variable
  appearing as a whole phrase, case-insensitive, unless it is also a target value). With
  ``leakage_check="judge"`` also an LLM judge (role "judge") that guesses every non-target variable or
  answers "not mentioned"; a guess equal to a value the variable holds at that time is a leak. A
  wrong guess is not counted, so a noisy judge does not reject harmless queries.
"""

from __future__ import annotations

import re
from typing import Any

from memevo.agents.llm.protocol import ChatClient, Role
from memevo.environments.amemgym.generation.ask import (
    StageError,
    Validator,
    array_schema,
    ask_json,
    object_schema,
    prompt,
    string_schema,
    text_field,
)
from memevo.environments.amemgym.generation.config import GenerationConfig

TEXT_SCHEMA, TEXT_VALID = text_field("query")

Schema = dict[str, list[str]]
NOT_MENTIONED = "not mentioned"
MAX_VARS_PER_INITIAL_QUERY = 3
_USER_WRITER = "You write what a user says to an AI assistant. Reply with JSON."


def mentions(text: str, value: str) -> bool:
    """Whether ``value`` occurs in ``text`` as a whole phrase, ignoring case."""
    return re.search(rf"(?<!\w){re.escape(value.strip())}(?!\w)", text, flags=re.IGNORECASE) is not None


def string_leaks(query: str, targets: dict[str, str], hidden: dict[str, set[str]]) -> list[str]:
    """Non-target variables whose current value appears verbatim in ``query``."""
    target_values = {value.lower() for value in targets.values()}
    return sorted(
        name for name, values in hidden.items()
        if any(value.lower() not in target_values and mentions(query, value) for value in values)
    )


async def _ask(
    llm: ChatClient, system: str, user: str, config: GenerationConfig, *, stage: str, schema: dict[str, Any],
    validate: Validator, role: Role = "generator",
) -> Any:
    """``ask_json`` on a fresh two-message prompt at the low temperature every query stage uses."""
    return await ask_json(
        llm, prompt(system, user), stage=stage, role=role, schema=schema, validate=validate,
        temperature=config.low_temperature, repair_turns=config.repair_turns,
    )


def _as_user(profile: dict[str, Any], situation: str, request: str) -> str:
    """The prompt of the stages that write as the user: who they are, what is going on, what to write."""
    return f"User profile:\n{profile['formatted_str']}\n\n{situation}\n\n{request}"


def _answer_schema(choices: dict[str, list[str]]) -> dict[str, Any]:
    return object_schema({name: {"enum": values} for name, values in choices.items()})


async def _judge_guess(llm: ChatClient, query: str, choices: dict[str, list[str]], config: GenerationConfig,
                       stage: str, *, allow_unknown: bool) -> dict[str, str]:
    """A judge's reading of the variables in ``choices`` from the query text alone."""
    options = {name: [*values, NOT_MENTIONED] if allow_unknown else values for name, values in choices.items()}
    hint = f' Answer "{NOT_MENTIONED}" when the message gives no clue.' if allow_unknown else ""
    reply = await _ask(
        llm,
        "You infer facts about a person from one message they wrote. Reply with JSON.",
        f"Message:\n{query}\n\nFor each fact pick the value the message states or implies.{hint}\n"
        + "\n".join(f"- {name}: {values}" for name, values in options.items())
        + "\nReturn {fact: value}.",
        config, stage=stage, role="judge", schema=_answer_schema(options),
        validate=lambda r: [] if isinstance(r, dict) and all(r.get(n) in v for n, v in options.items())
        else ["reply must give one listed value for every fact"],
    )
    return {name: reply[name] for name in options}


async def query_problems(
    llm: ChatClient, query: str, targets: dict[str, str], hidden: dict[str, set[str]], schema: Schema,
    config: GenerationConfig, stage: str,
) -> list[str]:
    """Exposure and leakage problems of one query (empty when it is acceptable)."""
    guess = await _judge_guess(llm, query, {name: schema[name] for name in targets}, config, stage, allow_unknown=False)
    problems = [f"a reader cannot tell that {name} is {value!r} (they guessed {guess[name]!r})"
                for name, value in targets.items() if guess[name] != value]
    leaked = set(string_leaks(query, targets, hidden))
    if config.leakage_check == "judge" and hidden:
        others = await _judge_guess(llm, query, {name: schema[name] for name in hidden}, config, stage, allow_unknown=True)
        leaked |= {name for name, value in others.items() if value in hidden[name]}
    problems += [f"it reveals {name}, which this message must not mention" for name in sorted(leaked)]
    return problems


async def checked_query(
    llm: ChatClient, query: str, targets: dict[str, str], hidden: dict[str, set[str]], schema: Schema,
    config: GenerationConfig, stage: str,
) -> str:
    """``query`` after it passes both checks, rewriting it when it does not."""
    for _ in range(config.check_retries + 1):
        problems = await query_problems(llm, query, targets, hidden, schema, config, stage)
        if not problems:
            return query
        facts = "; ".join(f"{name} = {value}" for name, value in targets.items())
        reply = await _ask(
            llm,
            "You rewrite a user's chat message. Reply with JSON.",
            f"Message:\n{query}\n\nIt should let a careful reader infer exactly these facts about the "
            f"writer: {facts}; and nothing about: {', '.join(hidden) or 'anything else'}.\nProblems:\n"
            + "\n".join(f"- {p}" for p in problems)
            + '\nRewrite the message as a natural request to an assistant. Return {"query": str}.',
            config, stage=stage, schema=TEXT_SCHEMA, validate=TEXT_VALID,
        )
        query = reply["query"].strip()
    raise StageError(stage, f"query for {sorted(targets)} still failed its checks after {config.check_retries} "
                     f"rewrites: {problems}")


def initial_query_problems(parsed: Any, state: dict[str, str]) -> list[str]:
    """C.10 rules: 1-3 variables per query, values equal the initial state, every variable covered."""
    queries = parsed.get("queries") if isinstance(parsed, dict) else None
    if not isinstance(queries, list) or not queries:
        return ["reply must be an object with a non-empty 'queries' list"]
    issues, covered = [], set()
    for index, entry in enumerate(queries, start=1):
        exposed = entry.get("exposed_states") if isinstance(entry, dict) else None
        if not isinstance(entry, dict) or not isinstance(entry.get("query"), str) or not entry["query"].strip() \
                or not isinstance(exposed, dict):
            issues.append(f"query {index}: needs a 'query' text and an 'exposed_states' object")
            continue
        if not 1 <= len(exposed) <= MAX_VARS_PER_INITIAL_QUERY:
            issues.append(f"query {index}: expose 1 to {MAX_VARS_PER_INITIAL_QUERY} facts, not {len(exposed)}")
        for name, value in exposed.items():
            if name not in state:
                issues.append(f"query {index}: unknown fact {name!r}")
            elif value != state[name]:
                issues.append(f"query {index}: {name!r} is {state[name]!r}, not {value!r}")
            else:
                covered.add(name)
    issues += [f"no query reveals {name!r}" for name in state if name not in covered]
    return issues


async def initial_queries(
    llm: ChatClient, profile: dict[str, Any], schema: Schema, state: dict[str, str], config: GenerationConfig
) -> list[dict[str, Any]]:
    """C.10: opening messages that together reveal the whole initial state, 1-3 facts each."""
    stage = "queries_p00"
    entry = object_schema(
        {"query": string_schema(),
         "exposed_states": object_schema({name: {"enum": [value]} for name, value in state.items()}, required=[])}
    )
    facts = "\n".join(f"- {name} = {value}" for name, value in state.items())
    parsed = await _ask(
        llm,
        _USER_WRITER,
        _as_user(profile, f"The user's situation on {config.start_date}:\n{facts}",
                 f"Write requests this user might send to an assistant. Each request reveals 1 to "
                 f"{MAX_VARS_PER_INITIAL_QUERY} of the facts, preferably indirectly but unmistakably, and says "
                 "nothing about the other facts. Together the requests reveal every fact.\n"
                 'Return {"queries": [{"query": str, "exposed_states": {fact: value}}]}.'),
        config, stage=stage, schema=object_schema({"queries": array_schema(entry, min_items=1)}),
        validate=lambda reply: initial_query_problems(reply, state),
    )
    sessions = []
    for entry_value in parsed["queries"]:
        targets = dict(entry_value["exposed_states"])
        hidden = {name: {value} for name, value in state.items() if name not in targets}
        query = await checked_query(llm, entry_value["query"].strip(), targets, hidden, schema, config, stage)
        sessions.append({"event": None, "exposed_states": targets, "query": query})
    return sessions


async def update_queries(
    llm: ChatClient, profile: dict[str, Any], schema: Schema, previous: dict[str, str], record: dict[str, Any],
    events: list[dict[str, Any]], step: int, config: GenerationConfig,
) -> list[dict[str, Any]]:
    """C.11: one opening message per event, revealing that event's new values and nothing else."""
    stage = f"queries_p{step:02d}"
    updated = record["updated"]
    current = previous | updated
    sessions = []
    for event in events:
        targets = {name: updated[name] for name in event["states"]}
        hidden = {name: {previous[name], current[name]} for name in schema if name not in targets}
        changes = "\n".join(f"- {name}: {previous[name]} -> {value}" for name, value in targets.items())
        situation = f"Recently ({record['period_start']} to {record['period_end']}): {event['event']}\n" \
            f"This changed:\n{changes}"
        reply = await _ask(
            llm,
            _USER_WRITER,
            _as_user(profile, situation,
                     "Write one request this user sends to an assistant that makes the new values clear, preferably "
                     'indirectly, and says nothing about other facts of their situation. Return {"query": str}.'),
            config, stage=stage, schema=TEXT_SCHEMA, validate=TEXT_VALID,
        )
        query = await checked_query(llm, reply["query"].strip(), targets, hidden, schema, config, stage)
        sessions.append({"event": event["event"], "exposed_states": targets, "query": query})
    return sessions
