"""The model default follows MEMEVO_MODEL so one variable points every role at a remote endpoint."""

import os
import subprocess
import sys

from memevo.agents.llm.config import LOCAL_MODEL_NAME, LLMConfig


def test_model_defaults_to_the_embedded_model(monkeypatch):
    monkeypatch.delenv("MEMEVO_MODEL", raising=False)
    assert LLMConfig().model == LOCAL_MODEL_NAME


def test_memevo_model_sets_the_default_and_is_recorded(monkeypatch):
    monkeypatch.setenv("MEMEVO_MODEL", "gpt-4.1-mini")
    config = LLMConfig()
    assert config.model == "gpt-4.1-mini"
    assert config.model_dump()["model"] == "gpt-4.1-mini"


def test_an_explicit_model_wins_over_memevo_model(monkeypatch):
    monkeypatch.setenv("MEMEVO_MODEL", "gpt-4.1-mini")
    assert LLMConfig(model="qwen2.5:7b").model == "qwen2.5:7b"



def test_importing_the_proposer_keeps_litellm_offline():
    """Without the default, importing DSPy tries to download litellm's price list (stalls offline)."""
    code = "import memevo.evolve.proposers.reflection, os; print(os.environ.get('LITELLM_LOCAL_MODEL_COST_MAP'))"
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "True"
