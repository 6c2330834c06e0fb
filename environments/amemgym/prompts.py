"""Read AMemGym's prompt texts from a user's checkout at run time (``--amemgym-source PATH``).

memevo ships its own wording and never AMemGym's. A user who has an AMemGym checkout can point memevo
at it, and the evaluation prompts (question, upper bound, probe), the agents' answer system prompts, the
AWI memory-write prompt and the user simulator's prompt are then read from those files, so the same
command measures AMemGym's agents rather than memevo's. The files are parsed with ``ast``, never
imported or executed. ``.format`` templates keep their ``{name}`` fields and lose the ``{{``/``}}``
escapes; f-strings become templates whose fields are named after the expression they held.

Not covered: AWE's fact-extraction and update prompts live in the mem0 package, not in the checkout,
so AWE keeps memevo's (``notes`` says so).
"""

from __future__ import annotations

import ast
import string
from pathlib import Path

from pydantic import ConfigDict

from memevo.agents.policy import MemoryPolicy
from memevo.core.errors import UserInputError
from memevo.core.lazy_model import LazyModel
from memevo.environments.qa import QuestionPrompts

OVERALL_FILE = "src/amemgym/eval/overall.py"
UPPER_BOUND_FILE = "src/amemgym/eval/upperbound.py"
DIAGNOSIS_FILE = "src/amemgym/eval/diagnosis.py"
AGENT_PROMPTS_FILE = "src/amemgym/assistants/prompts.py"
AWI_FILE = "src/amemgym/assistants/awi.py"
MEM0_FILE = "src/amemgym/assistants/mem0.py"
SIMULATOR_FILE = "src/amemgym/env/sample_interactions.py"

SIMULATOR_FIELDS = {
    "start_date": "start_date",
    "user_profile['formatted_str']": "profile",
    "current_date": "current_date",
    "query": "query",
    "context": "context",
    "json.dumps(state_schema, indent=2, ensure_ascii=False)": "state_schema",
}
"""The simulator f-string's expressions and the placeholder each becomes."""


class AMemGymPrompts(LazyModel):
    """The prompt texts of one AMemGym checkout, as memevo templates."""

    model_config = ConfigDict(frozen=True)

    source: str
    questions: QuestionPrompts
    awi_write: str
    awi_answer: str
    retrieved_answer: str
    simulator: str

    def apply_to(self, policy: MemoryPolicy) -> MemoryPolicy:
        """``policy`` with AMemGym's prompts for its kind (native: no system prompt, as AMemGym)."""
        by_kind = {
            "native": {"system_prompt": ""},
            "awi": {"write_prompt": self.awi_write, "answer_system_prompt": self.awi_answer},
            "rag": {"answer_system_prompt": self.retrieved_answer},
            "awe": {"answer_system_prompt": self.retrieved_answer},
        }
        return policy.with_prompts(**by_kind.get(policy.kind, {}))

    def notes(self, kind: str) -> list[str]:
        """What still uses memevo's wording for this agent kind."""
        if kind == "awe":
            return ["AWE's fact-extraction and update prompts are memevo's (AMemGym took them from mem0)"]
        return []


def _module(root: Path, relative: str) -> ast.Module:
    path = root / relative
    try:
        return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError, UnicodeDecodeError) as error:
        raise UserInputError(f"cannot read {relative}: {error}", source=str(root), field="--amemgym-source") from None


def _missing(root: Path, relative: str, what: str) -> UserInputError:
    return UserInputError(f"{relative} has no {what} (is this an AMemGym checkout?)", source=str(root),
                          field="--amemgym-source")


def format_template(text: str) -> str:
    """A ``str.format`` template as a memevo template: fields kept as ``{name}``, ``{{``/``}}`` unescaped."""
    parts = []
    for literal, field, _spec, _conversion in string.Formatter().parse(text):
        parts.append(literal)
        if field is not None:
            parts.append("{" + field + "}")
    return "".join(parts)


def string_constant(root: Path, relative: str, name: str) -> str:
    """The module-level string ``name = "..."`` of a file, as a memevo template."""
    for node in _module(root, relative).body:
        if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            return format_template(node.value.value)
    raise _missing(root, relative, f"string constant {name}")


def fstring_assignment(root: Path, relative: str, name: str, fields: dict[str, str] | None = None) -> str:
    """The first f-string assigned to ``name`` anywhere in a file, as a template: a field holding a bare
    variable becomes ``{variable}``; any other expression must be named in ``fields``."""
    for node in ast.walk(_module(root, relative)):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.JoinedStr)
                and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)):
            continue
        parts = []
        for part in node.value.values:
            if isinstance(part, ast.Constant):
                parts.append(str(part.value))
                continue
            assert isinstance(part, ast.FormattedValue)
            expression = ast.unparse(part.value)
            placeholder = (fields or {}).get(expression) or (expression if isinstance(part.value, ast.Name) else None)
            if placeholder is None:
                raise _missing(root, relative, f"known field {{{expression}}} in {name}")
            parts.append("{" + placeholder + "}")
        return "".join(parts)
    raise _missing(root, relative, f"f-string assigned to {name}")


def _memories_field(template: str) -> str:
    """AMemGym's answer prompts call the memory text ``memories_str``; memevo's agents fill ``memories``."""
    return template.replace("{memories_str}", "{memories}")


def load_amemgym_prompts(root: Path) -> AMemGymPrompts:
    """Every prompt memevo can take from the checkout at ``root``; a clear error if one is missing."""
    if not root.is_dir():
        raise UserInputError("not a folder", source=str(root), field="--amemgym-source")
    return AMemGymPrompts(
        source=str(root),
        questions=QuestionPrompts(
            qa=string_constant(root, OVERALL_FILE, "OVERALL_PROMPT"),
            upper_bound=string_constant(root, UPPER_BOUND_FILE, "UTILIZATION_PROMPT"),
            probe=string_constant(root, DIAGNOSIS_FILE, "DIAG_PROMPT"),
        ),
        awi_write=string_constant(root, AGENT_PROMPTS_FILE, "IN_CONTEXT_MEMORY_UPDATE_PROMPT"),
        awi_answer=_memories_field(fstring_assignment(root, AWI_FILE, "system_prompt")),
        retrieved_answer=_memories_field(fstring_assignment(root, MEM0_FILE, "system_prompt")),
        simulator=fstring_assignment(root, SIMULATOR_FILE, "followup_prompt", SIMULATOR_FIELDS),
    )
