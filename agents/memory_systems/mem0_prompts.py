"""The two write prompts memevo hands Mem0 (its ``custom_fact_extraction_prompt`` / ``custom_update_memory_prompt``).

The texts are memevo's own, written to the contract Mem0's library sets: the fact-extraction prompt is the system
message of a call whose user message is ``Input:`` and the flushed conversation, and whose reply Mem0 parses as
``{"facts": [...]}``; the update prompt is the head of a message to which Mem0 appends the stored memories (small
integer ids), the new facts and the reply format it parses (``{"memory": [{"id", "text", "event"}]}`` with events
ADD / UPDATE / DELETE / NONE). Mem0's built-in prompts are not the defaults: they carry the wall-clock date, which
would make every day's requests miss the response cache and mean a different prompt each day.
"""

from __future__ import annotations

from memevo.agents.base import ComponentSpec

FACTS_FORMAT_CLAUSE = 'Return JSON only, in the form {"facts": ["first fact", "second fact"]}.'

FACT_EXTRACTION_PROMPT = """\
You organise what an assistant should remember about the user it talks with. You are given a short piece of \
their conversation; write down the facts about the user that will still matter in later conversations.

Worth remembering:
{memory_types}

Rules:
- One short, self-contained fact per entry, in the user's language, e.g. "Is allergic to peanuts".
- Take facts from what the user says; the assistant's suggestions are not facts about the user.
- When the user reports a change, write the new situation, with when it changed if they say so.
- Skip greetings, small talk and questions that reveal nothing about the user.
- If there is nothing worth remembering, return an empty list.

Today is {today}.

""" + FACTS_FORMAT_CLAUSE

UPDATE_MEMORY_PROMPT = """\
You keep the long-term memory of an assistant about one user. Compare each newly learned fact with the stored \
memories shown below and decide, for every stored memory and every new fact, one event:
- ADD: the fact is new; store it as a new memory with a new id.
- UPDATE: the fact refines, corrects or supersedes a stored memory; keep that memory's id and give the merged, \
current text (prefer the newer information, keep details the fact does not contradict).
- DELETE: the fact shows a stored memory is no longer true; give that memory's id.
- NONE: the memory is unaffected, or the fact is already stored; leave it as it is.

Keep memories short and about the user. Today is {today}."""

FACT_EXTRACTION_COMPONENT = ComponentSpec(
    name="fact_extraction_prompt",
    description=(
        "Mem0's fact-extraction system prompt (custom_fact_extraction_prompt): Mem0 sends the flushed conversation "
        "as the user message after it and reads the reply as {\"facts\": [...]}. Optional placeholders: "
        "{memory_types} and {today} (simulated date)."
    ),
    default=FACT_EXTRACTION_PROMPT,
    optional_placeholders=("memory_types", "today"),
    output_format_clause=FACTS_FORMAT_CLAUSE,
)

UPDATE_MEMORY_COMPONENT = ComponentSpec(
    name="update_memory_prompt",
    description=(
        "Mem0's memory-update instructions (custom_update_memory_prompt): Mem0 appends the similar stored memories, "
        "the new facts and its reply format (events ADD/UPDATE/DELETE/NONE). Optional placeholder: {today}."
    ),
    default=UPDATE_MEMORY_PROMPT,
    optional_placeholders=("today",),
)
