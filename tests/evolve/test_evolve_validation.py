"""Proposal validation: mechanical repairs, rejections with reasons, never an exception."""

from memevo.agents.base import ComponentSpec
from memevo.evolve.validation import LengthBounds, validate_proposal

CLAUSE = "Reply with one JSON object."
SPEC = ComponentSpec(
    name="write_prompt", description="d", default="",
    required_placeholders=("current_memories", "conversation"), output_format_clause=CLAUSE,
)
PARENT = "Keep notes about the user.\nNotes: {current_memories}\nConversation: {conversation}\n" + CLAUSE
BOUNDS = LengthBounds()


def test_good_proposal_is_accepted_unchanged() -> None:
    text = "Keep precise notes about the user's commute.\nNotes: {current_memories}\nTalk: {conversation}\n" + CLAUSE
    verdict = validate_proposal(SPEC, text, PARENT, BOUNDS)
    assert verdict.accepted and verdict.text == text and verdict.repairs == []


def test_missing_placeholder_and_clause_are_re_appended() -> None:
    verdict = validate_proposal(SPEC, "Keep precise notes about the user's commute and hobbies.", PARENT, BOUNDS)
    assert verdict.accepted
    assert "{current_memories}" in verdict.text and "{conversation}" in verdict.text and CLAUSE in verdict.text
    assert len(verdict.repairs) == 3


def test_rejections_have_reasons() -> None:
    cases = {
        None: "empty",
        "   ": "empty",
        PARENT.replace("Keep notes", "Keep  notes"): "identical",
        PARENT + " Also {bogus}.": "unknown placeholder",
        "Hi {current_memories} {conversation} " + CLAUSE: None,  # accepted: short but above the floor
        PARENT * 10: "too long",
    }
    for text, reason in cases.items():
        verdict = validate_proposal(SPEC, text, PARENT, BOUNDS)
        if reason is None:
            assert verdict.accepted
        else:
            assert not verdict.accepted and reason in verdict.reason


def test_section_without_rules_only_checks_length_and_change() -> None:
    section = ComponentSpec(name="memory_types", description="d", default="- a")
    parent = "- preferences and tastes\n- health"
    assert validate_proposal(section, parent + "\n- commute", parent, BOUNDS).accepted
    assert "too short" in validate_proposal(section, "- x", parent, BOUNDS).reason


def test_text_that_is_not_a_prompt_is_rejected_though_repair_would_make_it_look_like_one() -> None:
    garbage = "#1,20083927 #46.5F.BETA 0x3f,991 #22.7A.GAMMA 44,18 #9.1C"
    verdict = validate_proposal(SPEC, garbage, PARENT, BOUNDS)
    assert not verdict.accepted and verdict.reason is not None and verdict.reason.startswith("not a prompt")
    assert verdict.text is None


def test_a_prompt_with_placeholders_and_a_json_example_is_prose() -> None:
    text = ('Keep notes about the user, e.g. {"city": "Paris", "age": "34"}.\nNotes: {current_memories}\n'
            "Conversation: {conversation}\n" + CLAUSE)
    assert validate_proposal(SPEC, text, PARENT, BOUNDS).accepted
