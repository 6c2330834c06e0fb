"""The memory-system kinds (mem0, amem) are built-in kinds: listed without their extras, defaults valid."""

from __future__ import annotations

import subprocess
import sys

import pytest

from memevo.agents.registry import agent_spec, available_kinds
from memevo.agents.templates import prompt_problems


@pytest.mark.parametrize("kind", ["mem0", "amem"])
def test_defaults_satisfy_their_own_specs(kind):
    assert kind in available_kinds()
    spec = agent_spec(kind)
    assert spec.hyperparameters == ("update_every", "short_term", "top_k")
    for component in spec.components:
        assert prompt_problems(component, component.default) == [], component.name


def test_the_kinds_are_listed_and_described_without_mem0_installed():
    script = ("import sys; sys.modules['mem0'] = None\n"
              "from memevo.agents.registry import agent_spec, available_kinds\n"
              "assert {'mem0', 'amem'} <= set(available_kinds())\n"
              "print(agent_spec('mem0').components[0].name)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "fact_extraction_prompt"
