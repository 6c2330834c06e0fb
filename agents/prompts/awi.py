"""Prompts of the in-context agentic-write agent (AWI): what to note and how to reply."""

from __future__ import annotations

from memevo.agents.base import ComponentSpec

WRITE_FORMAT_CLAUSE = (
    "Reply with a single JSON object that maps each label to a string value; "
    "reply with {} when nothing needs to change."
)

MEMORY_TYPES = """\
- Stable facts about the person: name, age, family, home, languages, pets.
- Work and study: job, employer, field, schedule, career plans.
- Health, fitness, diet and sleep, including conditions and routines.
- Tastes and preferences: food, media, hobbies, brands, styles, dislikes.
- How they like things done: budgets, service and travel preferences, tools they use.
- Goals, plans and upcoming events, with their dates when given.
- Anything else the user would expect a personal assistant to remember next time."""

WRITE_PROMPT = """\
You keep a personal notebook about one user for an assistant that will talk with them again later.
Read the latest piece of conversation and decide which notes to add or change.

Worth noting:
{memory_types}

Rules:
1. A note is a short label (for example "home_city" or "diet") and a one-sentence value written from \
the user's point of view, e.g. "moved to Lyon in March".
2. To change a note, reuse its exact label and restate the complete new value; the old value is \
replaced, not merged.
3. To remove a note that is no longer true, give its label the value "" (empty string).
4. Only note what the user said or clearly confirmed, not the assistant's suggestions.
5. Write notes in the language the user used.

Example: if the notes are {"pet": "has a cat"} and the user says "we adopted a puppy last week, the \
cat went to my sister", a good reply is {"pet": "has a puppy (adopted recently); the cat now lives \
with their sister"}.

Today is {today}.

Current notes (JSON):
{current_memories}

Latest conversation (JSON list of messages):
{conversation}

""" + WRITE_FORMAT_CLAUSE

MEMORY_TYPES_COMPONENT = ComponentSpec(
    name="memory_types",
    description=(
        "The list of kinds of information worth remembering, inserted at {memory_types} in write_prompt. "
        "Evolving only this section is AMemGym's info_type mode."
    ),
    default=MEMORY_TYPES,
)

WRITE_COMPONENT = ComponentSpec(
    name="write_prompt",
    description=(
        "Whole memory-write prompt. Placeholders: {current_memories} (JSON label->value), {conversation} "
        "(the flushed messages: a JSON list, or 'role: text' lines when the policy says so), optional {memory_types} and {today} (simulated date)."
    ),
    default=WRITE_PROMPT,
    required_placeholders=("current_memories", "conversation"),
    optional_placeholders=("memory_types", "today"),
    output_format_clause=WRITE_FORMAT_CLAUSE,
)
WRITE_PLACEHOLDERS = WRITE_COMPONENT.placeholders
