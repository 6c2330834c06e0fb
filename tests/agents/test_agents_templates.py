"""Templates substitute only declared placeholders; every built-in default passes its own rules."""

import pytest

from memevo.agents.base import ComponentSpec
from memevo.agents.registry import agent_spec, available_kinds
from memevo.agents.templates import placeholders_in, prompt_problems, render

BRACY = 'Output like {"label": "value"} or {{"nested": {"a": 1}}}, never {} or { alone }. Notes: {current_memories}'


def test_render_substitutes_only_declared_names():
    out = render(BRACY + " {other}", {"current_memories": "{}"}, {"current_memories"})
    assert out == BRACY.replace("{current_memories}", "{}") + " {other}"


def test_render_is_single_pass_so_values_with_placeholders_stay_literal():
    out = render("{a} and {b}", {"a": "{b}", "b": "B"}, {"a", "b"})
    assert out == "{b} and B"


def test_render_requires_values_for_declared_placeholders_present():
    with pytest.raises(KeyError, match="conversation"):
        render("{conversation}", {}, {"conversation"})
    assert render("no slots", {}, {"conversation"}) == "no slots"


def test_placeholders_in_ignores_json_and_doubled_braces():
    assert placeholders_in(BRACY) == {"current_memories"}
    assert placeholders_in("{{x}}") == {"x"}  # a doubled brace around a name still names it


def test_prompt_problems_reports_placeholders_and_format_clause():
    spec = ComponentSpec(name="p", description="", default="", required_placeholders=("a",), output_format_clause="JSON!")
    assert prompt_problems(spec, "{a} JSON!") == []
    assert prompt_problems(spec, "nothing") == ["missing placeholder {a}", "missing output-format clause: 'JSON!'"]


@pytest.mark.parametrize("kind", ["native", "rag", "awi", "awe"])
def test_defaults_satisfy_their_own_specs(kind):
    assert kind in available_kinds()
    for component in agent_spec(kind).components:
        assert prompt_problems(component, component.default) == [], component.name
