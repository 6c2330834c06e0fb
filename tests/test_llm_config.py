"""The model default follows MEMEVO_MODEL so one variable points every role at a remote endpoint."""

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
