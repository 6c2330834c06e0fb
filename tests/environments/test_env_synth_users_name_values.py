"""The generator's ``users_name_values`` world: users state each value in the options' words, and nothing else
changes; without it the generator writes what it wrote before the option existed."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from memevo.environments.amemgym.data.io import save_items
from memevo.environments.amemgym.data.validate import validate_items
from memevo.environments.amemgym.synth import SynthConfig, synthesize
from memevo.environments.amemgym.synth.vocabulary import load_vocabulary
from memevo.environments.amemgym.synth.writing import stated_value

BEFORE_THE_OPTION = {
    "78b0c62e15aa4112c68bb9d8500bfba0f923cbadcffcd55ec99ef0959e24bcd8":
        SynthConfig(users=2, periods=3, questions=4, seed=7),
    "9216eacdc01ba14ac63fa15eb86ce95294fb4e45be5c652a9476cf0b0c66fb73":
        SynthConfig(users=3, periods=2, questions=6, seed=5, filler_sentences=2, answers_name_values=True),
}
"""SHA-256 of the saved data.json, computed with the generator as it was before ``users_name_values`` existed."""
WORLD = SynthConfig(users=3, periods=4, questions=8, seed=21, answers_name_values=True)


@pytest.mark.parametrize(("digest", "config"), BEFORE_THE_OPTION.items())
def test_without_the_option_the_output_is_byte_identical_to_before(digest: str, config: SynthConfig,
                                                                   tmp_path: Path) -> None:
    save_items(synthesize(config), tmp_path / "data.json")
    assert hashlib.sha256((tmp_path / "data.json").read_bytes()).hexdigest() == digest


def test_users_state_their_values_in_the_options_words_and_nothing_else_changes() -> None:
    vocabulary = load_vocabulary()
    plain = synthesize(WORLD)
    named = synthesize(WORLD.model_copy(update={"users_name_values": True}))
    assert [v.describe() for v in validate_items(named, min_state_variants=WORLD.min_state_variants)] == []
    changed = 0
    for before, after in zip(plain, named, strict=True):
        sessions = [(b, a) for pb, pa in zip(before.periods, after.periods, strict=True)
                    for b, a in zip(pb.sessions, pa.sessions, strict=True)]
        for old, new in sessions:
            assert new.model_copy(update={"query": old.query}) == old
            expected = old.query
            for name, value in old.exposed_states.items():
                variable = vocabulary.variable(name)
                text = next(option for option in variable.values if option.value == value)
                phrasing = next(p for p in text.phrasings if p in old.query)
                expected = expected.replace(phrasing, stated_value(variable, text))
                assert f": {value}." in new.query  # the words an option opens with ("For <value>: ...")
            assert new.query == expected
            changed += new.query != old.query
        assert after.model_copy(update={"periods": before.periods}) == before
        assert all(choice.answer.startswith(f"For {' and '.join(choice.state)}:") for qa in after.qas for choice in qa.answer_choices)
    assert changed == sum(len(p.sessions) for item in plain for p in item.periods)
