"""The state probe of AMemGym's diagnosis (F.5): what does the agent believe the required states are?

The probe goes through ``agent.answer`` (booked as role ``probe``) against the same frozen state that
answered the questions, so a wrong probe points at memory rather than at reasoning. A reply without a
JSON object is asked again once (never under ``amemgym_compat``: the reference asked once). A key the
reply lacks (or every key, when it holds no JSON object) is listed in ``unread`` and marks a format
error, and the failure split never scores it (see ``metrics.failure``); a key present with a value that
is not one of the options (null, a number, another string) was read, and is wrong.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from memevo.agents.base import MemoryAgent
from memevo.agents.templates import render
from memevo.environments.amemgym.data.models import Item
from memevo.environments.qa import PROBE_PLACEHOLDERS, QuestionPrompts, extract_json_object, reference_json_object
from memevo.environments.records import ProbeRecord, remember


def build_probe_prompt(sub_schema: dict[str, list[str]], prompts: QuestionPrompts | None = None) -> str:
    """Ask for the current value of each listed information type, as strict JSON."""
    if prompts is not None:
        schema_text = json.dumps(sub_schema, ensure_ascii=False, indent=2)
        return render(prompts.probe, {"state_schema": schema_text}, PROBE_PLACEHOLDERS)
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


def parse_probe(text: str, keys: list[str], *, amemgym_compat: bool = False) -> dict[str, str | None] | None:
    """Per listed key present in the reply, the string the agent chose (None if not a string, e.g. null);
    None if the reply holds no JSON object (read as the reference did under ``amemgym_compat``). Absent
    keys are left out."""
    obj = reference_json_object(text) if amemgym_compat else extract_json_object(text)
    if obj is None:
        return None
    return {key: value if isinstance(value := obj[key], str) else None for key in keys if key in obj}


async def run_probe(agent: MemoryAgent, item: Item, period: int, question_index: int, *, user_id: str,
                    now: datetime, constrained: bool = True, amemgym_compat: bool = False,
                    prompts: QuestionPrompts | None = None, memories: dict[str, str] | None = None) -> ProbeRecord:
    """Probe one question's required states at the end of one period (``constrained``: with its schema); the
    consulted memory goes into ``memories`` (see ``records.remember``)."""
    keys = item.qas[question_index].required_info
    sub_schema = {key: item.state_schema[key] for key in keys}
    prompt = build_probe_prompt(sub_schema, prompts)
    query = probe_query(item, question_index)
    schema = probe_schema(sub_schema) if constrained else None
    reply = await agent.answer(prompt, query=query, now=now, json_schema=schema, role="probe")
    predicted = parse_probe(reply.text, keys, amemgym_compat=amemgym_compat)
    if predicted is None and not amemgym_compat:
        reminder = "\n\nYour previous reply could not be read; reply with the JSON object only."
        reply = await agent.answer(prompt + reminder, query=query, now=now, json_schema=schema, role="probe")
        predicted = parse_probe(reply.text, keys)
    truth = {key: item.periods[period].state[key] for key in keys}
    read = predicted or {}
    values = {key: read.get(key) for key in keys}
    unread = [key for key in keys if key not in read]
    return ProbeRecord(
        user_id=user_id,
        period=period,
        question_index=question_index,
        predicted=values,
        truth=truth,
        correct={key: values[key] == truth[key] for key in keys},
        format_error=bool(unread),
        unread=unread,
        memory_id=remember({} if memories is None else memories, reply.consulted_memory),
    )
