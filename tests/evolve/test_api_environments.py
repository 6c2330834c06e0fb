"""``memevo.evaluate`` on another benchmark than AMemGym: ``environment`` and ``options`` as ``memevo eval``'s
``--environment`` and ``--env-option``, and refusals that name them as a Python caller writes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memevo import evaluate
from memevo.agents.policy import MemoryPolicy
from memevo.core.errors import UserInputError
from memevo.environments.registry import ENVIRONMENTS
from tests.doubles.fault_server import FaultServer
from tests.doubles.registries import register_for_test
from tests.doubles.replay_environment import tiny_items


@pytest.fixture
def bench(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    register_for_test(monkeypatch, ENVIRONMENTS, "locomo", "tests.doubles.replay_environment:TinyReplayEnvironment")
    monkeypatch.setenv("MEMEVO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    data = tmp_path / "bench.json"
    data.write_text(json.dumps([item.model_dump(mode="json") for item in tiny_items(2)]))
    return data


def test_a_replayed_benchmark_is_evaluated_from_python(bench: Path, tmp_path: Path) -> None:
    with FaultServer(lambda body: '{"answer": 1}') as server:
        policy = MemoryPolicy(kind="native", llm={"model": "gpt-4.1-mini", "base_url": server.url})
        result = evaluate(policy, bench, out=tmp_path / "out", environment="locomo")
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["environment"] == "locomo" and result.scores.n_questions == summary["scores"]["n_questions"] > 0


@pytest.mark.parametrize(("arguments", "field", "words"), [
    ({"environment": "nope"}, "environment", "unknown environment 'nope'"),
    ({"environment": 7}, "environment", "an environment's name"),
    ({"environment": "locomo", "options": {"id_prefix": "x"}}, "options", "'id_prefix' is not a setting of locomo"),
    ({"environment": "locomo", "options": {"dialog_field": "dialog_mem0"}}, "dialog_field",
     "applies to environment='memorybench' only"),
    ({"environment": "locomo", "options": {"id_prefix": 3}}, "options", "a mapping of option names to str"),
])
def test_a_wrong_environment_setting_is_named_as_python_writes_it(bench: Path, tmp_path: Path, arguments: dict,
                                                                   field: str, words: str) -> None:
    with pytest.raises(UserInputError, match=words) as raised:
        evaluate(MemoryPolicy(kind="native"), bench, out=tmp_path / "out", **arguments)
    assert raised.value.field == field and "--" not in str(raised.value)


def test_users_given_as_objects_are_amemgym_items_only(bench: Path, tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match="give locomo's data as a file or folder path") as raised:
        evaluate(MemoryPolicy(kind="native"), tiny_items(1), out=tmp_path / "out", environment="locomo")
    assert raised.value.field == "data"
