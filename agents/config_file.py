"""Load a memory policy from a file: memevo's own YAML/JSON format or an AMemGym agent config.

memevo's format is the ``MemoryPolicy`` fields at the top level (``kind``, ``prompts``,
``update_every``, ``short_term``, ``top_k``, ``llm: {...}``, ...). A file with AMemGym's ``type`` +
``llm_config`` keys is read by ``load_amemgym_agent_config``. Either way the kind must be registered
and the prompts must keep their components' placeholders and output-format clauses.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from memevo.agents.amemgym_config import is_amemgym_agent_config, load_amemgym_agent_config
from memevo.agents.policy import MemoryPolicy
from memevo.agents.registry import validate_policy
from memevo.core.config_io import read_mapping, user_error


def load_policy(path: str | Path) -> MemoryPolicy:
    """The validated policy in ``path``; errors name the file and the field."""
    data = read_mapping(path)
    if is_amemgym_agent_config(data):
        policy = load_amemgym_agent_config(path)
    else:
        try:
            policy = MemoryPolicy.model_validate(data)
        except ValidationError as error:
            raise user_error(error, str(path)) from None
    validate_policy(policy, source=str(path))
    return policy
