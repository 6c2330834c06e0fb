"""Prompt templates that substitute only declared placeholders.

AMemGym formats its prompts with ``str.format`` after escaping braces, which crashes or corrupts the
text as soon as a prompt (or an evolved prompt) contains a JSON example (reference I.17, I.19). Here a
placeholder is ``{name}`` where ``name`` is one of the names the caller declares; every other brace,
including ``{"label": "value"}`` and ``{{...}}`` runs, is left exactly as written. Substitution is a
single pass, so braces inside substituted values (memories, conversations) are never re-read.
"""

from __future__ import annotations

import re

from memevo.agents.base import ComponentSpec

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def placeholders_in(text: str) -> set[str]:
    """Every ``{identifier}`` in ``text`` (whether or not a template declares it)."""
    return set(_PLACEHOLDER.findall(text))


def render(template: str, values: dict[str, str], allowed: set[str]) -> str:
    """Replace each ``{name}`` with ``values[name]`` for ``name`` in ``allowed``; leave all else alone.

    A declared placeholder that occurs in the template but has no value is a programming error
    (``KeyError``); declared names absent from the template are simply not used.
    """
    missing = sorted((placeholders_in(template) & allowed) - values.keys())
    if missing:
        raise KeyError(f"no value for placeholder(s) {missing}")

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        return values[name] if name in allowed else match.group(0)

    return _PLACEHOLDER.sub(substitute, template)


def prompt_problems(spec: ComponentSpec, text: str) -> list[str]:
    """Why ``text`` cannot serve as component ``spec`` (empty list when it can).

    A proposal must keep the component's required placeholders and its output-format clause verbatim,
    and may use no placeholder the agent does not fill (it would reach the LLM as a literal ``{name}``).
    """
    found = placeholders_in(text)
    problems = [f"missing placeholder {{{name}}}" for name in spec.required_placeholders if name not in found]
    unknown = sorted(found - spec.placeholders)
    if unknown:
        known = sorted(spec.placeholders)
        problems.append(f"unknown placeholder(s) {', '.join(f'{{{name}}}' for name in unknown)} "
                        f"(this component fills {', '.join(f'{{{name}}}' for name in known) or 'none'})")
    if spec.output_format_clause and spec.output_format_clause not in text:
        problems.append(f"missing output-format clause: {spec.output_format_clause!r}")
    return problems
