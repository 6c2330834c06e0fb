"""Single stages of the generation pipeline: repair loop, enforced limits, leakage, personas, timing."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pandas as pd
import pytest

from memevo.core.errors import UserInputError
from memevo.environments.amemgym.generation.answers import answer_variants
from memevo.environments.amemgym.generation.ask import StageError
from memevo.environments.amemgym.generation.config import GenerationConfig
from memevo.environments.amemgym.generation.evolution import state_update, update_problems
from memevo.environments.amemgym.generation.personas import basic_profile, sample_personas
from memevo.environments.amemgym.generation.queries import query_problems, string_leaks
from memevo.environments.amemgym.generation.timing import period_bounds, session_times
from tests.doubles.scripted_generator import ScriptedGenerator
from tests.doubles.scripted_llm import ScriptedLLM

SCHEMA = {"diet": ["vegan", "omnivore", "keto"], "job": ["nurse", "teacher", "student"], "city": ["Oslo", "Rome", "Lima"]}
STATE = {"diet": "vegan", "job": "nurse", "city": "Oslo"}
PROFILE = {"formatted_str": "name: Test Person"}
CONFIG = GenerationConfig(num_changes_per_period=2, max_changes_per_state=1, repair_turns=2)


async def test_invalid_state_update_is_repaired_in_conversation() -> None:
    llm = ScriptedLLM(ScriptedGenerator(bad_first_update=True))
    counts = dict.fromkeys(SCHEMA, 0)
    record = await state_update(llm, PROFILE, SCHEMA, STATE, [], counts, ("2020-10-01", "2021-01-01"), 1, CONFIG)
    assert len(llm.calls) == 2
    repair = llm.calls[1]["messages"]
    assert repair[-2]["role"] == "assistant" and "ghost" in repair[-2]["content"]
    assert "unknown variable 'ghost'" in repair[-1]["content"] and "'city' is already 'Oslo'" in repair[-1]["content"]
    assert not update_problems({"period_summary": "x", "updated": record["updated"]}, SCHEMA, STATE, counts, CONFIG)
    assert record["old"] == {name: STATE[name] for name in record["updated"]}


async def test_repair_gives_up_with_stage_name() -> None:
    llm = ScriptedLLM(lambda messages, role, wants_json: '{"period_summary": "x", "updated": {}}')
    with pytest.raises(StageError, match="state_update_p03"):
        await state_update(llm, PROFILE, SCHEMA, STATE, [], dict.fromkeys(SCHEMA, 0), ("a", "b"), 3, CONFIG)
    assert len(llm.calls) == CONFIG.repair_turns + 1


def test_update_rules_enforce_change_cap_and_count() -> None:
    counts = {"diet": 1, "job": 0, "city": 0}
    problems = update_problems({"period_summary": "x", "updated": {"diet": "keto", "job": "teacher"}},
                               SCHEMA, STATE, counts, CONFIG)
    assert problems == ["'diet' has already changed 1 times (limit 1)"]
    too_many = update_problems({"period_summary": "x", "updated": {"diet": "keto", "job": "teacher", "city": "Rome",
                                                                   "x": "y"}}, SCHEMA, STATE, dict.fromkeys(SCHEMA, 0), CONFIG)
    assert "change between 1 and 3 variables, not 4" in too_many and "unknown variable 'x'" in too_many


async def test_infeasible_update_fails_clearly() -> None:
    llm = ScriptedLLM(ScriptedGenerator())
    with pytest.raises(StageError, match="under the change limit"):
        await state_update(llm, PROFILE, SCHEMA, STATE, [], dict.fromkeys(SCHEMA, 1), ("a", "b"), 2, CONFIG)
    assert llm.calls == []


def test_string_leak_check() -> None:
    hidden = {"job": {"nurse"}, "city": {"Oslo", "Rome"}}
    assert string_leaks("As a Nurse I eat vegan food.", {"diet": "vegan"}, hidden) == ["job"]
    assert string_leaks("I eat vegan food near Romeo's.", {"diet": "vegan"}, hidden) == []


@pytest.mark.parametrize("check", ["judge", "string"])
async def test_leakage_check_rejects_query_revealing_non_target(check: str) -> None:
    llm = ScriptedLLM(ScriptedGenerator())
    config = GenerationConfig(leakage_check=check)
    hidden = {"job": {"nurse"}, "city": {"Oslo"}}
    clean = await query_problems(llm, "I eat diet=vegan now", {"diet": "vegan"}, hidden, SCHEMA, config, "q")
    assert clean == []
    # The judge double reads 'job=nurse'; the verbatim check sees 'nurse' too.
    leaky = await query_problems(llm, "I eat diet=vegan now, job=nurse", {"diet": "vegan"}, hidden, SCHEMA, config, "q")
    assert leaky == ["it reveals job, which this message must not mention"]
    judged = [c for c in llm.calls if "not mentioned" in c["messages"][1]["content"]]
    assert (len(judged) > 0) == (check == "judge")
    assert all(c["role"] == "judge" for c in llm.calls)


async def test_exposure_check_requires_target_values() -> None:
    llm = ScriptedLLM(ScriptedGenerator())
    problems = await query_problems(llm, "I like food", {"diet": "omnivore"}, {}, SCHEMA, CONFIG, "q")
    assert problems == ["a reader cannot tell that diet is 'omnivore' (they guessed 'vegan')"]


def test_answer_variants_are_reproducible_and_padded() -> None:
    states = [{"diet": "vegan", "job": "nurse"}, {"diet": "keto", "job": "nurse"}, {"diet": "vegan", "job": "nurse"}]
    draws = [answer_variants(["diet", "job"], states, SCHEMA, 4, random.Random("7:u:0")) for _ in range(2)]
    assert draws[0] == draws[1]
    assert len(draws[0]) == 4
    experience = sorted(tuple(v["state"]) for v in draws[0] if v["type"] == "experience")
    assert experience == [("keto", "nurse"), ("vegan", "nurse")]
    assert len({tuple(v["state"]) for v in draws[0]}) == 4


def test_personas_from_csv_parse_lists_and_keep_missing_fields(tmp_path: Path) -> None:
    rows = json.loads(GenerationConfig().personas_path.read_text())[:3]
    rows[0]["bachelors_field"] = None
    path = tmp_path / "p.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    personas = sample_personas(GenerationConfig(personas_path=path, num_user_profiles=3, seed=1))
    by_id = {p.uuid: p for p in personas}
    first = by_id[rows[0]["uuid"]]
    assert basic_profile(first)["education_level"] == rows[0]["education_level"]
    assert first.skills_and_expertise_list[0] == "critical care nursing"
    assert first.zipcode == "78210"
    again = sample_personas(GenerationConfig(personas_path=path, num_user_profiles=3, seed=1))
    assert [p.uuid for p in again] == [p.uuid for p in personas]


def test_bad_persona_files_name_the_problem(tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    pd.DataFrame([{"uuid": "x", "persona": "y"}]).to_csv(path, index=False)
    with pytest.raises(UserInputError, match="missing persona columns"):
        sample_personas(GenerationConfig(personas_path=path, num_user_profiles=1))
    with pytest.raises(UserInputError, match="num_user_profiles"):
        sample_personas(GenerationConfig(num_user_profiles=9))
    rows = json.loads(GenerationConfig().personas_path.read_text())[:1]
    rows[0]["hobbies_and_interests_list"] = "__import__('os')"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(rows))
    with pytest.raises(UserInputError, match="hobbies_and_interests_list"):
        sample_personas(GenerationConfig(personas_path=bad, num_user_profiles=1))


def test_period_bounds_and_session_times() -> None:
    assert period_bounds("2020-10-01", 0, 3) == (None, "2020-10-01")
    assert period_bounds("2020-10-01", 2, 3) == ("2021-01-01", "2021-04-01")
    assert period_bounds("2020-11-30", 1, 3) == ("2020-11-30", "2021-02-28")
    times = session_times("2020-10-01", 20, random.Random(1))
    assert times[0].startswith("2020-09-12") and times[-1].startswith("2020-10-01")
    assert times == sorted(times) and all("19:00:00" <= t[11:] <= "22:00:00" for t in times)


async def test_period_without_changes_has_no_events() -> None:
    from memevo.environments.amemgym.generation.evolution import elaborate_events

    llm = ScriptedLLM(ScriptedGenerator())
    record = {"updated": {}, "old": {}, "period_start": "a", "period_end": "b", "period_summary": "quiet"}
    assert await elaborate_events(llm, PROFILE, record, 1, CONFIG) == []
    assert llm.calls == []


def test_refined_names_must_be_snake_case() -> None:
    from memevo.environments.amemgym.generation.schema import _refine_problems

    questions = [{"question": "q", "required_info": [{"info_type": "1", "info_choices": []},
                                                      {"info_type": "b", "info_choices": []}]}]
    ok = {"types": [{"name": "sleep_hours", "merges": ["1"]}, {"name": "diet", "merges": ["b"]}]}
    assert _refine_problems(ok, questions) == []
    bad = {"types": [{"name": "1", "merges": ["1"]}, {"name": "diet", "merges": ["b", "b"]}]}
    assert _refine_problems(bad, questions) == ["'1' is not a short snake_case name", "'b' is mapped twice ('diet' and 'diet')"]
