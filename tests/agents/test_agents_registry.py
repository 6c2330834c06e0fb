"""The plug-in registry: built-ins, decorator, entry points, policy validation."""

import importlib.metadata
from datetime import datetime
from types import SimpleNamespace

import pytest

from memevo.agents import registry
from memevo.agents.base import AgentAnswer, AgentSpec, ComponentSpec, MemoryAgent
from memevo.agents.policy import MemoryPolicy
from memevo.agents.prompts.awi import WRITE_FORMAT_CLAUSE
from memevo.core.errors import UserInputError
from tests.agents.test_agents_support import scripted
from tests.doubles.registries import isolate


class EchoAgent(MemoryAgent):
    """A minimal plug-in agent used to exercise registration."""

    spec = AgentSpec(kind="echo", description="repeats", components=(ComponentSpec(name="greeting", description="", default="hi {name}", required_placeholders=("name",)),))

    async def respond(self, message: str, now: datetime) -> str:
        return message

    async def answer(self, prompt: str, *, query: str, now: datetime, json_schema: dict | None = None,
                     role: str = "agent") -> AgentAnswer:
        return AgentAnswer(text=query)

    async def end_session(self, now: datetime) -> None:
        pass

    async def ingest(self, user_message: str, assistant_message: str, now: datetime) -> None:
        pass

    def state(self) -> dict:
        return {}

    def load_state(self, state: dict) -> None:
        pass


@pytest.fixture
def clean_registry(monkeypatch):
    isolate(monkeypatch, registry.AGENTS)


def test_builtin_kinds_and_specs():
    assert set(registry.available_kinds()) >= {"native", "rag", "awi", "awe"}
    assert {c.name for c in registry.agent_spec("awi").components} == {"write_prompt", "memory_types", "answer_system_prompt"}
    assert registry.agent_spec("rag").hyperparameters == ("update_every", "short_term", "top_k")


def test_unknown_kind_lists_known_kinds():
    with pytest.raises(UserInputError, match="unknown agent kind 'letta'.*amem, awe, awi, mem0, native, rag"):
        registry.agent_class("letta")


def test_decorator_registers_a_plugin(clean_registry):
    registry.register_agent("echo")(EchoAgent)
    agent = registry.build_agent(MemoryPolicy(kind="echo"), scripted())
    assert isinstance(agent, EchoAgent) and agent.prompt("greeting") == "hi {name}"
    with pytest.raises(ValueError, match="spec.kind"):
        registry.register_agent("other")(EchoAgent)


def test_entry_point_plugin_is_discovered(clean_registry, monkeypatch):
    fake = SimpleNamespace(name="echo", load=lambda: EchoAgent)
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: [fake] if group == "memevo.agents" else [])
    monkeypatch.setattr(registry.AGENTS, "_discovered", False)
    assert registry.agent_class("echo") is EchoAgent


def test_build_agent_rejects_prompts_that_break_their_component():
    bad = MemoryPolicy(kind="awi", prompts={"write_prompt": "no slots " + WRITE_FORMAT_CLAUSE})
    with pytest.raises(UserInputError, match="prompts.write_prompt.*current_memories"):
        registry.build_agent(bad, scripted())
    unknown = MemoryPolicy(kind="rag", prompts={"write_prompt": "x"})
    with pytest.raises(UserInputError, match="no prompt component 'write_prompt'"):
        registry.build_agent(unknown, scripted())
