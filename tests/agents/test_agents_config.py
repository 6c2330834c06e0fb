"""Policy files: AMemGym agent configs as they are, and memevo's own YAML/JSON, with clear errors."""

import json
from pathlib import Path

import pytest

from memevo.agents.amemgym_config import load_amemgym_agent_config, read_amemgym_agent_config
from memevo.agents.config_file import load_policy
from memevo.core.errors import UserInputError

FIXTURES = Path(__file__).parents[1] / "fixtures" / "amemgym_agent"


@pytest.mark.parametrize(
    ("name", "kind", "knobs"),
    [
        ("native.json", "native", (2, 4, 30)),
        ("awi.json", "awi", (2, 4, 30)),
        ("rag-2-4-30.json", "rag", (2, 4, 30)),
        ("awe-2-4-30.json", "awe", (2, 4, 30)),
        ("awi-evolve-question-only.json", "awi", (2, 4, 30)),
    ],
)
def test_amemgym_agent_configs_load_as_they_are(name, kind, knobs):
    policy = load_policy(FIXTURES / name)
    assert policy.kind == kind
    assert (policy.update_every, policy.short_term, policy.top_k) == knobs
    assert policy.llm.model == "gpt-4.1-mini" and policy.llm.temperature == 0.0 and policy.llm.max_tokens == 8192
    assert policy.prompts == {}


def test_enable_llm_mem_policy_decides_rag_versus_awe(tmp_path):
    data = json.loads((FIXTURES / "rag-2-4-30.json").read_text())
    data["agent_config"].update(enable_llm_mem_policy=True, update_bsz=8, local_length=0, top_k=5)
    path = tmp_path / "x.json"
    path.write_text(json.dumps(data))
    policy = load_amemgym_agent_config(path, amemgym_compat=True)
    assert (policy.kind, policy.update_every, policy.short_term, policy.top_k, policy.amemgym_compat) == ("awe", 8, 0, 5, True)


def test_evolution_settings_are_exposed():
    config = read_amemgym_agent_config(FIXTURES / "awi-evolve-question-only.json")
    assert config.evolution.cadence == "period"
    assert config.evolution.feedback_types == ["vanilla_question_only"]
    assert config.evolution.init_prompt_type == "info_type"


def test_awi_hack_is_refused_with_a_reason(tmp_path):
    path = tmp_path / "hack.json"
    path.write_text(json.dumps({"type": "awi-hack", "llm_config": {"llm_model": "m"}}))
    with pytest.raises(UserInputError, match="hack.json, field 'type'.*oracle"):
        load_policy(path)


def test_own_yaml_policy(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(
        "kind: awi\nupdate_every: 8\nshort_term: 0\nflush_on_session_end: true\n"
        "prompts:\n  memory_types: |\n    - diets, like {\"diet\": \"vegan\"}\nllm:\n  model: m\n"
    )
    policy = load_policy(path)
    assert policy.update_every == 8 and policy.flush_on_session_end
    assert policy.prompts["memory_types"] == '- diets, like {"diet": "vegan"}\n'


@pytest.mark.parametrize(
    ("text", "suffix", "match"),
    [
        ("kind: awi\nupdate_every: 0\n", ".yaml", "p.yaml, field 'update_every'"),
        ("kind: awi\nllm:\n  temperature: 9\n", ".yaml", "field 'llm.temperature'"),
        ("kind: nope\n", ".yaml", "field 'kind'.*known: amem, awe, awi, mem0, native, rag"),
        ("kind: awi\nprompts:\n  write_prompt: hi\n", ".yml", "field 'prompts.write_prompt'"),
        ('{"type": "awi", "llm_config": {"llm_model": "m"}, "agent_config": {"update_bsz": -1}}', ".json", "field 'agent_config.update_bsz'"),
        ('{"type": "awi", "llm_config": {}}', ".json", "field 'llm_config.llm_model'"),
        ("[1, 2]", ".json", "expected a mapping"),
        ("kind: [", ".yaml", "not valid YAML"),
    ],
)
def test_bad_files_name_file_and_field(tmp_path, text, suffix, match):
    path = tmp_path / f"p{suffix}"
    path.write_text(text)
    with pytest.raises(UserInputError, match=match):
        load_policy(path)


def test_missing_file(tmp_path):
    with pytest.raises(UserInputError, match="cannot read file"):
        load_policy(tmp_path / "absent.yaml")


def test_amemgym_llm_errors_use_amemgym_names(tmp_path):
    path = tmp_path / "a.json"
    path.write_text(json.dumps({"type": "native", "llm_config": {"llm_model": "m", "temperature": 7}}))
    with pytest.raises(UserInputError, match="a.json, field 'llm_config.temperature'"):
        load_policy(path)
