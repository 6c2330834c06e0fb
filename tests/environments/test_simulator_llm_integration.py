"""The LLM user simulator on the real local model (SmolLM2-135M through the LLM hub)."""

from __future__ import annotations

import pytest

from memevo.agents.llm.config import LLMConfig
from memevo.agents.llm.hub import LLMHub
from memevo.environments.amemgym.simulators.llm import LLMUserSimulator
from tests.environments.test_simulator_llm import NOW, conversation, make_item


@pytest.mark.integration
async def test_real_model_writes_a_non_empty_follow_up(tmp_path) -> None:
    item = make_item()
    async with LLMHub(cache_dir=tmp_path / "cache") as hub:
        simulator = LLMUserSimulator(hub.client(LLMConfig(max_tokens=96)))
        reply = await simulator.follow_up(item, 0, item.periods[0].sessions[0], conversation(1), NOW)
        usage = hub.accounting.report().by_role["user_simulator"]
    assert reply.strip()
    assert not simulator.leaks(item, reply)
    assert usage.calls == simulator.stats.calls + simulator.stats.reasked
