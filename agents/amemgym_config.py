"""Load AMemGym's agent config files (``configs/agent/*.json``) as they are (reference D.4, E, G.2).

Mapping: ``native`` -> native; ``awi`` and ``awi-evolve`` -> awi; ``rag``, ``awe``, ``rag-evolve`` and
``mem0-evolution`` -> awe when ``agent_config.enable_llm_mem_policy`` is true, else rag (absent flag:
true only for type ``awe``); ``update_bsz`` -> update_every, ``local_length`` -> short_term, ``top_k``
-> top_k; ``llm_config.llm_model``/``temperature``/``max_tokens``/``base_url`` -> the LLM config.
Ignored on purpose: ``api_key`` (keys are never stored, I.26), ``memory_config`` (mem0/Milvus, replaced
by the built-in SQLite store with BM25 retrieval), ``name`` and ``source``. ``awi-hack`` needs the
oracle state schema of each item, so it is refused. The evolution settings are not part of a memory
policy; ``read_amemgym_agent_config`` exposes them for the evolution loop.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from memevo.agents.llm.config import LLMConfig
from memevo.agents.policy import MemoryPolicy
from memevo.core.config_io import read_mapping, user_error
from memevo.core.errors import UserInputError
from memevo.core.lazy_model import LazyModel

AMemGymType = Literal["native", "awi", "awi-hack", "awi-evolve", "rag", "awe", "rag-evolve", "mem0-evolution"]
_STORE_TYPES = ("rag", "awe", "rag-evolve", "mem0-evolution")


class AMemGymLLMConfig(LazyModel):
    """``llm_config``: which model and sampling settings."""

    model_config = ConfigDict(extra="allow")

    llm_model: str
    temperature: float = 0.0
    max_tokens: int = 8192
    base_url: str | None = None


class AMemGymEvolutionConfig(LazyModel):
    """``evolution_config`` of the evolvable agents (reference G.2)."""

    model_config = ConfigDict(extra="forbid")

    cadence: Literal["period", "no_evolution"]
    feedback_types: list[Literal["vanilla", "vanilla_question_only", "with_answer", "with_exposed_states"]] = []
    targets: list[str] = []
    init_prompt_type: str = "default"


class AMemGymAgentSettings(LazyModel):
    """``agent_config``: buffer and retrieval knobs."""

    model_config = ConfigDict(extra="forbid")

    update_bsz: int | None = None
    local_length: int | None = None
    top_k: int | None = None
    enable_llm_mem_policy: bool | None = None
    evolution_config: AMemGymEvolutionConfig | None = None


class AMemGymAgentFile(LazyModel):
    """One AMemGym agent config file. ``evolution_config`` may sit at the top level (released files)
    or inside ``agent_config``."""

    model_config = ConfigDict(extra="forbid")

    type: AMemGymType
    name: str | None = None
    llm_config: AMemGymLLMConfig
    memory_config: dict[str, Any] | None = None
    agent_config: AMemGymAgentSettings = AMemGymAgentSettings()
    evolution_config: AMemGymEvolutionConfig | None = None

    @property
    def evolution(self) -> AMemGymEvolutionConfig | None:
        return self.evolution_config or self.agent_config.evolution_config


def is_amemgym_agent_config(data: dict[str, Any]) -> bool:
    """Whether a parsed file has AMemGym's shape rather than memevo's policy shape."""
    return "type" in data and "llm_config" in data and "kind" not in data


def read_amemgym_agent_config(path: str | Path) -> AMemGymAgentFile:
    """The file parsed and validated, evolution settings included."""
    try:
        return AMemGymAgentFile.model_validate(read_mapping(path))
    except ValidationError as error:
        raise user_error(error, str(path)) from None


def _kind(config: AMemGymAgentFile, source: str) -> str:
    if config.type == "awi-hack":
        raise UserInputError(
            "type 'awi-hack' needs each item's oracle state schema; use 'awi' and evolve 'memory_types' instead",
            source=source,
            field="type",
        )
    if config.type in _STORE_TYPES:
        infer = config.agent_config.enable_llm_mem_policy
        return "awe" if (infer if infer is not None else config.type == "awe") else "rag"
    return "native" if config.type == "native" else "awi"


_KNOBS = {"update_bsz": "update_every", "local_length": "short_term", "top_k": "top_k"}
_LLM_FIELDS = {"llm_model": "model", "temperature": "temperature", "max_tokens": "max_tokens", "base_url": "base_url"}


def _translated(fields: dict[str, str], values: dict[str, Any], model: type[BaseModel], source: str, section: str) -> Any:
    """Validate AMemGym-named ``values`` as ``model`` fields, reporting errors under the AMemGym name."""
    ours = {fields[name]: value for name, value in values.items() if value is not None}
    try:
        return model.model_validate(ours)
    except ValidationError as error:
        field = str(error.errors()[0]["loc"][0])
        theirs = next(name for name, mine in fields.items() if mine == field)
        raise UserInputError(error.errors()[0]["msg"], source=source, field=f"{section}.{theirs}") from None


def load_amemgym_agent_config(path: str | Path, *, amemgym_compat: bool = False) -> MemoryPolicy:
    """The memevo policy equivalent to an AMemGym agent config file."""
    source = str(path)
    config = read_amemgym_agent_config(path)
    llm_values = {name: getattr(config.llm_config, name) for name in _LLM_FIELDS}
    llm = _translated(_LLM_FIELDS, llm_values, LLMConfig, source, "llm_config")
    knobs = {name: getattr(config.agent_config, name) for name in _KNOBS}
    policy_fields = {**_KNOBS, "kind": "kind", "llm": "llm", "amemgym_compat": "amemgym_compat"}
    values = {**knobs, "kind": _kind(config, source), "llm": llm, "amemgym_compat": amemgym_compat}
    return _translated(policy_fields, values, MemoryPolicy, source, "agent_config")
