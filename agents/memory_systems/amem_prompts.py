"""The three write prompts of the A-Mem agent, in memevo's words after the paper's design (Xu et al., 2025,
"A-MEM: Agentic Memory for LLM Agents"): note construction, link generation and memory evolution."""

from __future__ import annotations

from memevo.agents.base import ComponentSpec

NOTE_FORMAT_CLAUSE = 'Reply with a JSON object {"keywords": ["..."], "tags": ["..."], "context": "..."}.'
LINK_FORMAT_CLAUSE = 'Reply with a JSON object {"links": ["<id>", "..."]}.'
EVOLUTION_FORMAT_CLAUSE = (
    'Reply with a JSON object {"updates": [{"id": "<id>", "context": "<new context>", "tags": ["..."]}]}.'
)

NOTE_PROMPT = """\
You file one piece of a conversation between a user and an assistant as a note in the assistant's long-term \
memory. Describe it so that it can be found again later:
- keywords: the few words that carry its meaning (names, places, activities, preferences), most important first;
- tags: two to four broad categories it belongs to, e.g. "health", "work", "family", "travel";
- context: one sentence saying what the note tells about the user and why it may matter later.

Today is {today}.

Conversation:
{content}

""" + NOTE_FORMAT_CLAUSE

LINK_PROMPT = """\
A new note has been added to the assistant's memory about a user. Below are the stored notes most similar to it. \
Pick the ones that are genuinely related to the new note (the same person, topic, plan or preference, or a \
change to something noted before); pick none if nothing is related.

New note:
{note}

Similar stored notes (JSON list of id, content, context, tags):
{candidates}

""" + LINK_FORMAT_CLAUSE

EVOLUTION_PROMPT = """\
A new note has been added to the assistant's memory about a user. The notes below are linked to it. Decide \
whether what the new note says should change how any of them is described: rewrite the context of a linked note \
when the new note adds to it, corrects it or makes it out of date, and adjust its tags if its topic is now \
better described otherwise. Leave out every note that needs no change.

Today is {today}.

New note:
{note}

Linked notes (JSON list of id, content, context, tags):
{neighbours}

""" + EVOLUTION_FORMAT_CLAUSE

NOTE_COMPONENT = ComponentSpec(
    name="note_prompt",
    description="Note construction: keywords, tags and context for the flushed messages. Placeholders: {content} "
    "(one 'role: text' line per message), optional {today} (simulated date).",
    default=NOTE_PROMPT,
    required_placeholders=("content",),
    optional_placeholders=("today",),
    output_format_clause=NOTE_FORMAT_CLAUSE,
)

LINK_COMPONENT = ComponentSpec(
    name="link_prompt",
    description="Link generation: which of the most similar stored notes the new note links to. Placeholders: "
    "{note} (the new note), {candidates} (JSON list of id/content/context/tags), optional {today}.",
    default=LINK_PROMPT,
    required_placeholders=("note", "candidates"),
    optional_placeholders=("today",),
    output_format_clause=LINK_FORMAT_CLAUSE,
)

EVOLUTION_COMPONENT = ComponentSpec(
    name="evolution_prompt",
    description="Memory evolution: new context and tags for linked notes the new note changes. Placeholders: "
    "{note} (the new note), {neighbours} (JSON list of id/content/context/tags), optional {today}.",
    default=EVOLUTION_PROMPT,
    required_placeholders=("note", "neighbours"),
    optional_placeholders=("today",),
    output_format_clause=EVOLUTION_FORMAT_CLAUSE,
)
