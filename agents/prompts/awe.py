"""Prompts of the external agentic-write agent (AWE): extract facts, then reconcile each with the store."""

from __future__ import annotations

from memevo.agents.base import ComponentSpec

EXTRACT_FORMAT_CLAUSE = 'Reply with a JSON object of the form {"facts": ["...", "..."]}.'
UPDATE_FORMAT_CLAUSE = (
    'Reply with a JSON object {"action": "add" | "update" | "delete" | "keep", "id": "<id of the '
    'affected memory, or empty for add>", "text": "<the memory text to store, for add and update>"}.'
)

FACT_EXTRACTION_PROMPT = """\
You read conversations between a user and an assistant and pull out the facts about the user that \
are worth remembering for future conversations.

Look for:
{memory_types}

Guidelines:
- One fact per entry, short and self-contained, e.g. "Works night shifts at a hospital".
- Only what the user stated or confirmed; skip greetings, questions and the assistant's advice.
- If the user says something changed, state the new situation and when, e.g. "Since this spring, \
cycles to work instead of driving".
- Keep the user's language. Return an empty list if there is nothing to remember.

Today is {today}.

Conversation:
{conversation}

""" + EXTRACT_FORMAT_CLAUSE

UPDATE_PROMPT = """\
You maintain a long-term memory about a user. A new fact has been learned; compare it with the most \
similar memories already stored and choose exactly one action:
- "add": the fact is new information; store it as a new memory.
- "update": the fact refines or supersedes one stored memory; give that memory's id and the merged, \
up-to-date text.
- "delete": the fact shows one stored memory is no longer true and the fact itself need not be kept; \
give that memory's id.
- "keep": the fact is already covered; change nothing.

Today is {today}.

Stored memories (JSON list of {"id": ..., "text": ...}):
{existing_memories}

New fact:
{new_fact}

""" + UPDATE_FORMAT_CLAUSE

FACT_EXTRACTION_COMPONENT = ComponentSpec(
    name="fact_extraction_prompt",
    description=(
        "Turns flushed messages into facts. Placeholders: {conversation} (one 'role: text' line per "
        "message), optional {memory_types} and {today} (simulated date)."
    ),
    default=FACT_EXTRACTION_PROMPT,
    required_placeholders=("conversation",),
    optional_placeholders=("memory_types", "today"),
    output_format_clause=EXTRACT_FORMAT_CLAUSE,
)

UPDATE_COMPONENT = ComponentSpec(
    name="update_prompt",
    description=(
        "Decides add/update/delete/keep for one fact against similar stored memories. Placeholders: "
        "{existing_memories} (JSON list of id/text), {new_fact}, optional {today}."
    ),
    default=UPDATE_PROMPT,
    required_placeholders=("existing_memories", "new_fact"),
    optional_placeholders=("today",),
    output_format_clause=UPDATE_FORMAT_CLAUSE,
)
EXTRACT_PLACEHOLDERS = FACT_EXTRACTION_COMPONENT.placeholders
UPDATE_PLACEHOLDERS = UPDATE_COMPONENT.placeholders
