"""The state probe of AMemGym's diagnosis (F.5): what does the agent believe the required states are?

The probe goes through ``agent.answer`` against the same frozen state that answered the questions, so a
wrong probe points at memory rather than at reasoning. A reply without a JSON object is asked again once;
a missing key or an unparsable reply counts as wrong and as a format error.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from memevo.agents.base import MemoryAgent
from memevo.environments.data.models import Item
from memevo.environments.qa import extract_json_object
from memevo.environments.records import ProbeRecord, remember


def build_probe_prompt(sub_schema: dict[str, list[str]]) -> str:
    """Ask for the current value of each listed information type, as strict JSON."""
    return (
        "Think back over our previous conversations. For each type of information below, pick the option "
        "closest to my current situation.\n\n"
        f"{json.dumps(sub_schema, ensure_ascii=False, indent=2)}\n\n"
        'Reply with nothing except a JSON object {"<information type>": "<chosen option>"} covering '
        "every type listed, with each option copied exactly."
    )


def probe_schema(sub_schema: dict[str, list[str]]) -> dict[str, Any]:
    """The JSON schema of a valid probe reply: every listed type, each one of its own options."""
    return {
        "type": "object",
        "properties": {key: {"type": "string", "enum": list(choices)} for key, choices in sub_schema.items()},
        "required": list(sub_schema),
    }


def probe_query(item: Item, question_index: int) -> str:
    """The bare text a retrieving agent should search with (not the whole prompt; defect I.10)."""
    question = item.qas[question_index]
    return f"{question.query} ({', '.join(question.required_info)})"


def parse_probe(text: str, keys: list[str]) -> dict[str, str | None] | None:
    """Per key, the string the agent chose (None if absent or not a string); None if no JSON object."""
    obj = extract_json_object(text)
    if obj is None:
        return None
    return {key: value if isinstance(value := obj.get(key), str) else None for key in keys}


async def run_probe(agent: MemoryAgent, item: Item, period: int, question_index: int, *, user_id: str,
                    now: datetime, constrained: bool = True, memories: dict[str, str] | None = None) -> ProbeRecord:
    """Probe one question's required states at the end of one period (``constrained``: with its schema); the
    consulted memory goes into ``memories`` (see ``records.remember``)."""
    keys = item.qas[question_index].required_info
    sub_schema = {key: item.state_schema[key] for key in keys}
    prompt = build_probe_prompt(sub_schema)
    query = probe_query(item, question_index)
    schema = probe_schema(sub_schema) if constrained else None
    reply = await agent.answer(prompt, query=query, now=now, json_schema=schema)
    predicted = parse_probe(reply.text, keys)
    if predicted is None:
        reminder = "\n\nYour previous reply could not be read; reply with the JSON object only."
        reply = await agent.answer(prompt + reminder, query=query, now=now, json_schema=schema)
        predicted = parse_probe(reply.text, keys)
    truth = {key: item.periods[period].state[key] for key in keys}
    values = predicted or {key: None for key in keys}
    return ProbeRecord(
        user_id=user_id,
        period=period,
        question_index=question_index,
        predicted=values,
        truth=truth,
        correct={key: values[key] == truth[key] for key in keys},
        format_error=predicted is None or any(value is None for value in values.values()),
        memory_id=remember({} if memories is None else memories, reply.consulted_memory),
    )
