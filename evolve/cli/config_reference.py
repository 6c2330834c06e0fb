"""The reference of every config field, generated from the pydantic models: their JSON Schema and a markdown page.

``memevo config schema KIND`` prints a kind's JSON Schema; ``experiments/REFERENCE.md`` is the page, written by
``python -m memevo.evolve.cli.config_reference experiments/REFERENCE.md`` (``tests/evolve/test_config_reference.py`` fails
when the page no longer matches the models).
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, NoDefault
from pydantic_core import core_schema

REGENERATE = "python -m memevo.evolve.cli.config_reference experiments/REFERENCE.md"
PACKAGE_ROOT = Path(__file__).resolve().parents[2]
"""The folder holding ``agents``, ``environments`` and ``evolve``: defaults under it are shown relative to it."""


class Kind(NamedTuple):
    title: str
    model: str
    """``module:Class`` of the model, imported when asked for."""
    used_by: str


KINDS: dict[str, Kind] = {
    "evolve": Kind("Evolution config", "memevo.evolve.config:EvolveConfig",
                   "The YAML file of `memevo evolve CONFIG` and of an ablation's `base` and arms."),
    "ablate": Kind("Ablation config", "memevo.evolve.ablation.config:AblationConfig",
                   "The YAML file of `memevo ablate CONFIG`: arms x seeds over the same users."),
    "agent": Kind("Agent policy", "memevo.agents.policy:MemoryPolicy",
                  "The file of `memevo eval --agent`, an evolution's `seed.policy_file`, or inline as "
                  "`seed.policy` (an AMemGym agent JSON is read too)."),
    "llm": Kind("LLM endpoint", "memevo.agents.llm.config:LLMConfig",
                "Every `llm` section: the agent policy's, an evolution's `llm.agent`, `llm.proposer`, "
                "`llm.simulator` and `llm.judge`, and the generation config's."),
    "env": Kind("Environment generation config", "memevo.environments.amemgym.generation.config:GenerationConfig",
                "The YAML file of `memevo env generate --config`: AMemGym's LLM pipeline that writes a "
                "`data.json`."),
    "synth": Kind("Procedural environment", "memevo.environments.amemgym.synth.config:SynthConfig",
                  "An evolution's `data.synth` section, and the flags of `memevo env synth`: worlds made "
                  "without an LLM."),
    "data": Kind("Data format (AMemGym items)", "memevo.environments.amemgym.data.models:Item",
                 "One element of the list in a `data.json` (or one row of a dataset); see below."),
}
LINKED = {"MemoryPolicy": "agent", "LLMConfig": "llm"}
"""Models with a section of their own: other sections link to it instead of repeating its fields."""
LLM_FIELDS = {
    "model": "Left out: $MEMEVO_MODEL, else the one model the endpoint lists, else the embedded model; the chosen "
             "name is stored with the results.",
    "base_url": "OpenAI-compatible /v1 URL; null: $OPENAI_BASE_URL, else the embedded model.",
    "api_key_env": "The environment variable holding the API key (the key itself is never stored).",
    "temperature": "Sampling temperature.",
    "max_tokens": "Completion token limit per request.",
    "timeout_s": "Per-request timeout in seconds.",
    "max_retries": "Retries of a failed request.",
}
"""What ``LLMConfig``'s fields mean, until its module (agents/llm) carries the descriptions itself. Its ``model`` is
required by the model but filled in by a ``mode="before"`` validator, so a file may leave it out."""


def model_of(kind: str) -> type[BaseModel]:
    module, name = KINDS[kind].model.split(":")
    model: type[BaseModel] = getattr(importlib.import_module(module), name)
    return model


class _FileSchema(GenerateJsonSchema):
    """The schema of what a user writes: without the fields a loader sets (``exclude=True``), with the defaults
    of list and mapping fields made by a factory, and package files shown relative to the package."""

    def field_is_present(self, field: core_schema.ModelField) -> bool:  # type: ignore[override]
        return not field.get("serialization_exclude") and super().field_is_present(field)

    def get_default_value(self, schema: core_schema.WithDefaultSchema) -> Any:
        default = schema.get("default", NoDefault)
        factory = schema.get("default_factory")
        if default is NoDefault and factory is not None and schema["schema"]["type"] in ("list", "dict"):
            default = factory()  # type: ignore[call-arg]  # not a model's: LLMConfig's may ask an endpoint
        if isinstance(default, Path) and default.is_relative_to(PACKAGE_ROOT):
            return f"<memevo>/{default.relative_to(PACKAGE_ROOT).as_posix()}"
        return default


def json_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema of a config kind's file."""
    schema = model_of(kind).model_json_schema(schema_generator=_FileSchema)
    definitions = schema.get("$defs", {})
    for node in (definitions.get("LLMConfig"), schema if schema.get("title") == "LLMConfig" else None):
        if node is not None:
            node["required"] = [field for field in node.get("required", []) if field != "model"]
            for field, text in LLM_FIELDS.items():
                node["properties"][field].setdefault("description", text)
    return schema


class Row(NamedTuple):
    path: str
    type: str
    default: str
    meaning: str


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _constraints(node: dict[str, Any]) -> str:
    bounds = [("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="), ("exclusiveMaximum", "<"),
              ("minItems", "items >=")]
    found = [f"{sign} {node[key]}" for key, sign in bounds if key in node and (key, node[key]) != ("minItems", 0)]
    return f" ({', '.join(found)})" if found else ""


class _Page:
    """Rows of one kind's schema: every field by its dotted path, nested sections expanded."""

    def __init__(self, schema: dict[str, Any], own: str | None = None) -> None:
        self.definitions: dict[str, Any] = schema.get("$defs", {})
        self.schema = schema
        self.own = own

    def _definition(self, node: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
        if "$ref" not in node:
            return None, node
        name = node["$ref"].rsplit("/", 1)[-1]
        return name, self.definitions[name]

    def type_of(self, node: dict[str, Any]) -> str:
        if "anyOf" in node:
            options = [self.type_of(option) for option in node["anyOf"] if option.get("type") != "null"]
            nullable = any(option.get("type") == "null" for option in node["anyOf"])
            return " or ".join(options) + (" or null" if nullable else "")
        name, target = self._definition(node)
        if name in LINKED and name != self.own:
            return f"[{KINDS[LINKED[name]].title}](#{LINKED[name]})"
        if "enum" in target:
            return "one of " + ", ".join(f"`{value}`" for value in target["enum"])
        kind = target.get("type")
        if kind == "array":
            return f"list of {self.type_of(target.get('items', {}))}" + _constraints(target)
        if kind == "object" and "properties" in target:
            return "section (fields below)"
        if kind == "object":
            values = target.get("additionalProperties")
            keys = target.get("propertyNames", {}).get("enum")
            key_text = "/".join(f"`{key}`" for key in keys) if keys else "name"
            value_text = self.type_of(values) if isinstance(values, dict) else "any value"
            return f"mapping of {key_text} to {value_text}"
        text = {"string": "text", "integer": "integer", "number": "number", "boolean": "true/false"}.get(str(kind), "any")
        if target.get("format") == "path":
            text = "path"
        return text + _constraints(target)

    def rows(self, node: dict[str, Any] | None = None, prefix: str = "") -> Iterator[Row]:
        node = self.schema if node is None else node
        required = set(node.get("required", []))
        for name, field in node.get("properties", {}).items():
            path = f"{prefix}{name}"
            if "default" in field:
                default = f"`{json.dumps(field['default'], ensure_ascii=False)}`"
            options = [option for option in field.get("anyOf", [field]) if option.get("type") != "null"]
            definition_name, target = self._definition(options[0]) if len(options) == 1 else (None, {})
            if "default" not in field:
                default = ("required" if name in required else "its fields' defaults" if "properties" in target
                           or definition_name in LINKED else "see meaning")
            linked = definition_name in LINKED and definition_name != self.own
            meaning = field.get("description") or ("" if linked else target.get("description", ""))
            yield Row(path, self.type_of(field), default, meaning)
            if not linked:
                yield from self._nested(target, path)

    def _nested(self, target: dict[str, Any], path: str) -> Iterator[Row]:
        if "properties" in target:
            yield from self.rows(target, f"{path}.")
        elif target.get("type") == "array":
            name, items = self._definition(target.get("items", {}))
            if name not in LINKED and "properties" in items:
                yield from self.rows(items, f"{path}[].")
        elif isinstance(target.get("additionalProperties"), dict):
            name, values = self._definition(target["additionalProperties"])
            if name not in LINKED and "properties" in values:
                yield from self.rows(values, f"{path}.<name>.")


def table(kind: str) -> str:
    rows = list(_Page(json_schema(kind), own=model_of(kind).__name__).rows())
    lines = ["| field | type | default | meaning |", "|---|---|---|---|"]
    lines += [f"| `{row.path}` | {_cell(row.type)} | {_cell(row.default)} | {_cell(row.meaning)} |" for row in rows]
    return "\n".join(lines)


INTRO = f"""# Config reference

Every field of memevo's config files, generated from the pydantic models that validate them (an unknown field is
an error naming the file and the field). Fields are written by their dotted path: `budget.generations` is
`generations` inside `budget`; `arms[].name` is `name` in each element of the list `arms`; `<name>` stands for a
key you choose. A default of "its fields' defaults" means the section may be left out.

- `memevo config example KIND` prints a commented starting config (KIND: evolve, ablate, agent, env) that loads
  as it is: `memevo config example evolve > my-evolution.yaml`.
- `memevo config schema KIND` prints a kind's JSON Schema (also llm, synth, data), for editors that check YAML
  against a schema.
- This page is generated: `{REGENERATE}`.
"""

DATA_FORMAT = """Bring your own data as AMemGym's `data.json`: a JSON list with one item per simulated user. `memevo eval --env`,
an evolution's `data.path` and `memevo env validate` / `stats` read it, as well as a folder or file made by
`datasets` (`save_to_disk`, parquet, arrow, JSON lines: one item per row) and a Hugging Face hub id
(`AGI-Eval/AMemGym`). Field names are AMemGym's, so its files load unchanged.

An item is one user over time. `state_schema` names the user's variables (say `commute`) and the values each can
take (`bicycle`, `bus`, `car`). `periods` run in order: period 0 ends on `start_time` and sets every variable
(each `updates` entry with `old: null`); each later period changes some variables (`updates`, and `state`, the
values at the period's end). In each period's `sessions` the user opens a conversation with `query` (the user
simulator continues it), revealing `exposed_states`. After each period the agent answers every question in
`qas`: a multiple-choice question whose `required_info` lists the variables it depends on; each answer choice
gives values for those variables (`state`, in the order of `required_info`) and the answer text. The gold choice
in a period is the one whose `state` matches the user's state then, so the score measures whether the agent
remembered what the user said.

`memevo env validate data.json` checks what scoring relies on and exits 2 on an error: every state value is in
`state_schema`; `updates` match the change of `state` between periods; session times lie inside their period
(`period_start`, `period_end`]; a variable a question needs was revealed in a session before it is asked, with
its current value; exactly one choice matches the state in every period; ids are unique and can name a folder.
Warnings (fewer choices than `--min-state-variants`, `type` labels, `update_cnts`) do not stop a run.
`memevo env synth` writes a small valid file to start from: `memevo env synth --users 2 --out data.json`.
"""


def reference_markdown() -> str:
    """The whole reference page."""
    parts = [INTRO]
    for kind, spec in KINDS.items():
        parts.append(f'<a id="{kind}"></a>\n\n## {spec.title}\n\n{spec.used_by}\n')
        if kind == "data":
            parts.append(DATA_FORMAT)
        parts.append(table(kind) + "\n")
    return "\n".join(parts)


def main() -> None:
    """Write the page to the path given (``experiments/REFERENCE.md`` in a checkout)."""
    if len(sys.argv) != 2:
        raise SystemExit(f"usage: {REGENERATE}")
    Path(sys.argv[1]).write_text(reference_markdown(), encoding="utf-8")


if __name__ == "__main__":
    main()
