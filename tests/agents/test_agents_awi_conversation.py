"""How AWI's write prompt shows the conversation: AMemGym's JSON list unless the policy chooses 'role: text' lines,
and the choice stays out of the ids of policies that keep the default."""

import json
from pathlib import Path

import pytest
import yaml

from memevo.agents.policy import MemoryPolicy
from tests.agents.test_agents_awi import run_rounds
from tests.agents.test_agents_support import json_calls, make, scripted


@pytest.mark.parametrize("compat", [False, True])
async def test_the_default_shows_the_conversation_as_a_json_list_of_messages(compat):
    llm = scripted(["{}"])
    await run_rounds(make("awi", llm, update_every=2, short_term=0, amemgym_compat=compat), 1)
    indent = 2 if compat else None
    shown = json.dumps([{"role": "user", "content": "message 0"}, {"role": "assistant", "content": "Noted."}],
                       indent=indent)
    assert shown in json_calls(llm)[0]


async def test_lines_show_one_role_and_text_line_per_message_and_no_json_list():
    llm = scripted(["{}"])
    await run_rounds(make("awi", llm, update_every=2, short_term=0, write_conversation="lines"), 1)
    prompt = json_calls(llm)[0]
    assert "user: message 0\nassistant: Noted." in prompt
    assert '"role"' not in prompt and '"content"' not in prompt


def test_the_default_rendering_keeps_policy_ids_and_lines_make_a_new_one():
    policy = MemoryPolicy(kind="awi")
    assert "write_conversation" not in policy.canonical_json()
    assert MemoryPolicy(kind="awi", write_conversation="json").policy_id == policy.policy_id
    lines = MemoryPolicy(kind="awi", write_conversation="lines")
    assert lines.policy_id != policy.policy_id and '"write_conversation": "lines"' in lines.canonical_json()
    assert lines.with_hyperparameters(short_term=2).write_conversation == "lines"


def test_an_unknown_rendering_is_refused():
    with pytest.raises(ValueError, match="write_conversation"):
        MemoryPolicy(kind="awi", write_conversation="yaml")


def test_only_the_quickstart_chooses_lines_among_the_shipped_experiments():
    """AMemGym's experiments and every other shipped config keep the JSON list (and so their policy ids)."""
    experiments = Path(__file__).resolve().parents[2] / "experiments"
    choosing = sorted(path.relative_to(experiments).as_posix() for path in experiments.rglob("*.yaml")
                      if "write_conversation:" in path.read_text(encoding="utf-8"))
    assert choosing == ["quickstart.yaml"]
    seed = yaml.safe_load((experiments / "quickstart.yaml").read_text(encoding="utf-8"))["seed"]["policy"]
    assert MemoryPolicy.model_validate(seed).write_conversation == "lines"
