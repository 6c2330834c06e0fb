"""The procedural generator: determinism, validity, exact exposure, AMemGym semantics, length knob."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memevo.core.errors import UserInputError
from memevo.environments.amemgym.data.io import load_items, save_items
from memevo.environments.amemgym.data.validate import validate_items
from memevo.environments.amemgym.stats import compute_stats
from memevo.environments.amemgym.synth import SynthConfig, synthesize
from memevo.environments.amemgym.synth.timeline import add_months
from memevo.environments.amemgym.synth.vocabulary import load_vocabulary

SMALL = SynthConfig(users=2, periods=3, questions=4, seed=7)


def _write(config: SynthConfig, path: Path) -> bytes:
    save_items(synthesize(config), path)
    return path.read_bytes()


def test_same_config_gives_byte_identical_file(tmp_path: Path) -> None:
    assert _write(SMALL, tmp_path / "a.json") == _write(SMALL, tmp_path / "b.json")


def test_different_seeds_differ(tmp_path: Path) -> None:
    assert _write(SMALL, tmp_path / "a.json") != _write(SMALL.model_copy(update={"seed": 8}), tmp_path / "b.json")


def test_users_differ_within_a_file() -> None:
    first, second = synthesize(SMALL)
    assert first.id != second.id
    assert first.user_profile.formatted_str != second.user_profile.formatted_str


@pytest.mark.parametrize(
    "config",
    [
        SMALL,
        SynthConfig(users=1, periods=0, questions=1, seed=1),
        SynthConfig(users=2, periods=10, questions=10, seed=2),
        SynthConfig(users=1, periods=6, questions=17, seed=3, states_per_question=3, choices_per_state=4,
                    changes_per_period=6, sessions_init=30, min_state_variants=6),
        SynthConfig(users=1, periods=4, questions=3, seed=4, months_per_period=1, start_date="2021-01-31",
                    changes_per_period=1, sessions_init=2),
    ],
)
def test_output_validates_and_round_trips(config: SynthConfig, tmp_path: Path) -> None:
    items = synthesize(config)
    assert [v.describe() for v in validate_items(items, min_state_variants=config.min_state_variants)] == []
    save_items(items, tmp_path / "data.json")
    assert load_items(tmp_path / "data.json") == items
    for item in items:
        assert len(item.periods) == config.periods + 1
        assert len(item.qas) == config.questions
        assert all(len(q.required_info) == config.states_per_question for q in item.qas)
        assert all(len(values) == config.choices_per_state for values in item.state_schema.values())
        assert all(len(q.answer_choices) >= min(config.min_state_variants, config.choices_per_state ** 2)
                   for q in item.qas)


def test_amemgym_field_semantics() -> None:
    item = synthesize(SynthConfig(users=1, periods=4, questions=6, seed=5))[0]
    assert item.id == item.user_profile.uuid and len(item.id) == 36
    assert item.start_time == item.periods[0].period_end == "2020-10-01"
    ends = ["2020-10-01", "2021-01-01", "2021-04-01", "2021-07-01", "2021-10-01"]
    assert [p.period_end for p in item.periods] == ends
    assert [p.period_start for p in item.periods] == [None, "2020-10-01", "2021-01-01", "2021-04-01", "2021-07-01"]
    first = item.periods[0]
    assert first.period_summary is None and all(s.event is None for s in first.sessions)
    assert {k: (u.old, u.new) for k, u in first.updates.items()} == {k: (None, v) for k, v in first.state.items()}
    assert set().union(*(s.exposed_states for s in first.sessions)) == set(item.state_schema)
    assert all(1 <= len(s.exposed_states) <= 3 for s in first.sessions)
    totals = {key: sum(key in p.updates for p in item.periods[1:]) for key in item.state_schema}
    assert all(p.update_cnts == totals for p in item.periods)
    for period in item.periods[1:]:
        assert period.period_summary and all(s.event for s in period.sessions)
        exposed = [key for s in period.sessions for key in s.exposed_states]
        assert sorted(exposed) == sorted(period.updates)  # one event per session covers every change once
        assert 3 <= len(period.updates) <= 5
    for period in item.periods:
        days = [dt.datetime.strptime(s.session_time, "%Y-%m-%d %H:%M:%S") for s in period.sessions]
        assert days[-1].strftime("%Y-%m-%d") == period.period_end  # last n days up to the period end
        assert all(dt.time(19) <= d.time() < dt.time(22) for d in days)
        assert [d.date() for d in days] == [days[-1].date() - dt.timedelta(days=len(days) - 1 - i)
                                            for i in range(len(days))]
    for qa in item.qas:
        visited = {tuple(p.state[k] for k in qa.required_info) for p in item.periods}
        assert {tuple(c.state) for c in qa.answer_choices if c.type == "experience"} == visited
        assert len({c.answer for c in qa.answer_choices}) == len(qa.answer_choices)


def _phrasing_index() -> list[tuple[str, str, str]]:
    return load_vocabulary().all_phrasings()


def _revealed(query: str) -> set[tuple[str, str]]:
    return {(var, value) for var, value, phrasing in _phrasing_index() if phrasing in query}


@pytest.mark.parametrize("filler", [0, 5])
def test_queries_expose_exactly_the_intended_values(filler: int) -> None:
    items = synthesize(SynthConfig(users=3, periods=5, questions=10, seed=11, filler_sentences=filler))
    sessions = [s for item in items for p in item.periods for s in p.sessions]
    assert len(sessions) > 50
    for session in sessions:
        assert _revealed(session.query) == set(session.exposed_states.items()), session.query


def test_events_and_profile_reveal_no_value() -> None:
    for item in synthesize(SynthConfig(users=3, periods=5, questions=10, seed=12)):
        texts = [p.period_summary or "" for p in item.periods]
        texts += [s.event or "" for p in item.periods for s in p.sessions]
        texts.append(item.user_profile.formatted_str)
        assert all(_revealed(text) == set() for text in texts)


def test_filler_scales_context_length() -> None:
    base = SynthConfig(users=1, periods=10, questions=10, seed=3)
    short = compute_stats(synthesize(base)).query_tokens
    long = compute_stats(synthesize(base.model_copy(update={"filler_sentences": 200}))).query_tokens
    assert long > 20 * short
    assert long > 150_000


def test_month_arithmetic_clamps_day() -> None:
    assert add_months(dt.date(2021, 1, 31), 1) == dt.date(2021, 2, 28)
    assert add_months(dt.date(2020, 10, 1), 15) == dt.date(2022, 1, 1)


@pytest.mark.parametrize(
    ("update", "field"),
    [
        ({"questions": 18}, "questions"),
        ({"choices_per_state": 5}, "choices_per_state"),
        ({"states_per_question": 6}, "states_per_question"),
        ({"questions": 10, "sessions_init": 2}, "sessions_init"),
    ],
)
def test_impossible_configs_are_user_errors(update: dict, field: str) -> None:
    with pytest.raises(UserInputError) as caught:
        synthesize(SMALL.model_copy(update=update))
    assert caught.value.field == field


def test_custom_vocabulary_errors_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "vocab.json"
    bad.write_text('{"variables": []}', encoding="utf-8")
    with pytest.raises(UserInputError, match="vocab.json"):
        synthesize(SMALL.model_copy(update={"vocabulary": bad}))


def test_byte_identical_across_processes_with_different_hash_seeds(tmp_path: Path) -> None:
    script = ("import sys; from memevo.environments.amemgym.synth import SynthConfig, synthesize; "
              "from memevo.environments.amemgym.data.io import save_items; "
              "save_items(synthesize(SynthConfig(users=2, periods=3, questions=5, seed=9)), sys.argv[1])")
    outputs = []
    for hash_seed in ("1", "2"):
        target = tmp_path / f"{hash_seed}.json"
        subprocess.run([sys.executable, "-c", script, str(target)], check=True,
                       env={**os.environ, "PYTHONHASHSEED": hash_seed})
        outputs.append(target.read_bytes())
    assert outputs[0] == outputs[1]
