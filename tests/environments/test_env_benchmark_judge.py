"""The benchmarks' judge through the real gateway: its calls are booked under the ``judge`` role, apart from the
agent's, and a repeated verdict comes from the response cache."""

from __future__ import annotations

import json
from pathlib import Path

from memevo.agents.llm.accounting import Accounting
from memevo.agents.llm.cache import ResponseCache
from memevo.agents.llm.config import LLMConfig
from memevo.agents.llm.gateway import LLMGateway
from memevo.environments.benchmarks.longmemeval import LongMemEvalEnvironment
from memevo.environments.runner import EpisodeConfig
from tests.doubles.fault_server import FaultServer
from tests.doubles.replay_agents import ReplayRecordingAgent

RECORD = {"question_id": "q1", "question_type": "multi-session", "question": "Where did I move?", "answer": "Lisbon",
          "question_date": "2023/06/01 (Thu) 10:00", "haystack_session_ids": ["s1"],
          "haystack_dates": ["2023/05/01 (Mon) 09:00"],
          "haystack_sessions": [[{"role": "user", "content": "I moved to Lisbon."}]]}


async def test_judge_calls_are_counted_under_their_role_and_cached(tmp_path: Path) -> None:
    path = tmp_path / "longmemeval_s.json"
    path.write_text(json.dumps([RECORD]), encoding="utf-8")
    with FaultServer(lambda body: "Yes") as server:
        usages = []
        for _ in range(2):
            gateway = LLMGateway(LLMConfig(model="test-model", max_retries=0), base_url=server.url,
                                 cache=ResponseCache(tmp_path / "cache"), accounting=Accounting())
            environment = LongMemEvalEnvironment(EpisodeConfig(), judge=gateway)
            (item,) = environment.load_items(path)
            episode = await environment.run_item(ReplayRecordingAgent(lambda prompt, memory: "Lisbon"), item, None)
            assert episode.periods[0].qa[0].value == 1.0
            await gateway.aclose()
            gateway.cache.close()
            usages.append(gateway.accounting.report().by_role)
        assert len(server.requests) == 1
    first, second = usages
    assert set(first) == {"judge"} and (first["judge"].calls, first["judge"].cache_hits) == (1, 0)
    assert (second["judge"].calls, second["judge"].cache_hits) == (1, 1)
    assert first["judge"].prompt_tokens == second["judge"].prompt_tokens > 0
