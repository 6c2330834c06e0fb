"""DSPy signatures of the two proposal styles: a whole prompt, or only its list of memory types.

The docstrings are the instructions DSPy sends; they are ours, written for this framework.
"""

from __future__ import annotations

import dspy


class RewritePrompt(dspy.Signature):
    """You revise one prompt of an assistant that keeps a long-term memory about its user.

    Read the task, the current prompt and the feedback from conversations where this prompt was used.
    Write a complete improved prompt: sharpen the instructions, examples and the kinds of facts worth
    storing so that later questions about the user's current situation can be answered. Keep every
    {placeholder} exactly as written and keep the instructions about the output format unchanged.
    Also list the changes you made, briefly.
    """

    task: str = dspy.InputField(desc="what the memory agent has to achieve")
    component: str = dspy.InputField(desc="which prompt this is and what it does")
    current_text: str = dspy.InputField(desc="the prompt as it is now")
    feedback: str = dspy.InputField(desc="evidence from the environment about how the prompt performed")
    new_text: str = dspy.OutputField(desc="the complete revised prompt")
    changes: list[str] = dspy.OutputField(desc="one short line per change")


class RewriteTypes(dspy.Signature):
    """You revise the list of information types an assistant stores in its long-term memory.

    Read the task, the current list and the feedback from conversations where it was used. Return an
    improved list in the same style (one type per line): make each type specific and actionable, add
    types the feedback shows are missing, drop ones that never matter. Also list your changes briefly.
    """

    task: str = dspy.InputField(desc="what the memory agent has to achieve")
    current_types: str = dspy.InputField(desc="the current list of information types")
    feedback: str = dspy.InputField(desc="evidence from the environment about what was missed")
    new_types: str = dspy.OutputField(desc="the complete revised list of information types")
    changes: list[str] = dspy.OutputField(desc="one short line per change")


class EditRules(dspy.Signature):
    """You improve a text that instructs an assistant keeping a long-term memory about its user, by small edits.

    The text is given as numbered lines. Read the task, the lines and the feedback from conversations
    where the text was used, and return a few edits, one per entry, each in one of these forms:
    "ADD: <new line>", "REWRITE <number>: <new line>", "REMOVE <number>". Edit only what the feedback
    shows is missing or wrong; keep every {placeholder} and the instructions about the output format.
    """

    task: str = dspy.InputField(desc="what the memory agent has to achieve")
    component: str = dspy.InputField(desc="which text this is and what it does")
    numbered_lines: str = dspy.InputField(desc="the text as it is now, one numbered line each")
    feedback: str = dspy.InputField(desc="evidence from the environment about how the text performed")
    edits: list[str] = dspy.OutputField(desc="ADD: ..., REWRITE n: ..., or REMOVE n; one edit per entry")
