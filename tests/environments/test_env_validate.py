"""Each validation rule is caught by a corrupted copy of the fixture, and the fixture itself is clean."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from memevo.environments.amemgym.data.models import Item
from memevo.environments.amemgym.data.validate import Violation, has_errors, validate_items

FIXTURE = Path(__file__).parents[1] / "fixtures" / "amemgym_small.json"


def _rows() -> list[dict]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def _violations(mutate: Callable[[list[dict]], None]) -> list[Violation]:
    rows = _rows()
    mutate(rows)
    return validate_items([Item.model_validate(row) for row in rows])


def test_fixture_is_valid() -> None:
    assert validate_items([Item.model_validate(row) for row in _rows()]) == []


def _parent(rows: list[dict], path: tuple) -> dict | list:
    node = rows
    for key in path[:-1]:
        node = node[key]
    return node


def _set(path: tuple, value) -> Callable[[list[dict]], None]:
    """A mutation that sets the field at ``path`` (keys and indices from the top-level list) to ``value``."""
    def mutate(rows: list[dict]) -> None:
        _parent(rows, path)[path[-1]] = value
    return mutate


def _delete(path: tuple) -> Callable[[list[dict]], None]:
    def mutate(rows: list[dict]) -> None:
        del _parent(rows, path)[path[-1]]
    return mutate


def _duplicate_first_item(rows: list[dict]) -> None:
    rows.append(json.loads(json.dumps(rows[0])))


def _drop_gold_choice(rows: list[dict]) -> None:
    choices = rows[0]["qas"][0]["answer_choices"]
    choices[:] = [c for c in choices if c["state"] != ["half marathon", "bicycle"]]


def _duplicate_choice(rows: list[dict]) -> None:
    choices = rows[0]["qas"][0]["answer_choices"]
    choices.append(dict(choices[0]))


def _unexposed_change(rows: list[dict]) -> None:
    """Period 2 changes commute but no session reveals it."""
    sessions = rows[0]["periods"][2]["sessions"]
    sessions[0]["exposed_states"] = {"living_situation": "house with partner"}


def _swap_sessions(rows: list[dict]) -> None:
    sessions = rows[1]["periods"][0]["sessions"]
    sessions[0], sessions[1] = sessions[1], sessions[0]


# (mutation, rule, severity, item index, period, question)
CASES = [
    (_duplicate_first_item, "item-id", "error", 0, None, None),
    (_set((0, "user_profile", "uuid"), "other-id"), "item-id", "warning", 0, None, None),
    (_set((1, "state_schema", "diet"), ["vegetarian"]), "schema", "error", 1, None, None),
    (_set((0, "start_time"), "2020/10/01"), "period-dates", "error", 0, None, None),
    (_set((0, "periods", 0, "period_end"), "2020-09-30"), "period-dates", "error", 0, 0, None),
    (_set((0, "periods", 2, "period_start"), "2021-02-01"), "period-dates", "error", 0, 2, None),
    (_set((0, "periods", 1, "period_end"), "2021-13-01"), "period-dates", "error", 0, 1, None),
    (_delete((1, "periods", 1, "state", "sleep")), "state", "error", 1, 1, None),
    (_set((1, "periods", 1, "state", "sleep"), "insomnia"), "state", "error", 1, 1, None),
    (_delete((0, "periods", 0, "updates", "budget")), "updates", "error", 0, 0, None),
    (_set((0, "periods", 1, "updates", "budget", "old"), "comfortable"), "updates", "error", 0, 1, None),
    (_delete((0, "periods", 1, "updates", "budget")), "updates", "error", 0, 1, None),
    (_set((1, "periods", 1, "update_cnts", "diet"), 3), "update-counts", "warning", 1, 1, None),
    (_set((0, "periods", 1, "sessions", 0, "session_time"), "2020-12-31T21:05:44"), "session-time", "error", 0, 1,
     None),
    (_set((0, "periods", 1, "sessions", 0, "session_time"), "2021-01-02 19:00:00"), "session-time", "error", 0, 1,
     None),
    (_set((0, "periods", 1, "sessions", 0, "session_time"), "2020-10-01 19:00:00"), "session-time", "error", 0, 1,
     None),
    (_set((0, "periods", 0, "sessions", 0, "session_time"), "2020-10-02 19:00:00"), "session-time", "error", 0, 0,
     None),
    (_swap_sessions, "session-order", "warning", 1, 0, None),
    (_set((0, "periods", 0, "sessions", 0, "exposed_states", "commute"), "scooter"), "exposure", "error", 0, 0,
     None),
    (_set((0, "periods", 1, "sessions", 0, "exposed_states", "budget"), "comfortable"), "exposure", "error", 0, 1,
     None),
    (_unexposed_change, "exposure", "error", 0, 2, None),
    (_set((0, "qas", 1, "required_info"), ["budget", "pets"]), "question", "error", 0, None, 1),
    (_set((0, "qas", 0, "answer_choices", 3, "state"), ["half marathon"]), "choice", "error", 0, None, 0),
    (_set((0, "qas", 0, "answer_choices", 3, "state"), ["half marathon", "scooter"]), "choice", "error", 0, None, 0),
    (_duplicate_choice, "choice", "error", 0, None, 0),
    (_duplicate_choice, "gold", "error", 0, 0, 0),
    (_drop_gold_choice, "gold", "error", 0, 1, 0),
    (_delete((1, "qas", 0, "answer_choices", 3)), "variants", "warning", 1, None, 0),
    (_set((1, "qas", 1, "answer_choices", 3, "type"), "experience"), "choice-type", "warning", 1, None, 1),
    (_set((1, "periods"), []), "periods", "error", 1, None, None),
    (_set((0, "qas"), []), "questions", "error", 0, None, None),
]


@pytest.mark.parametrize(("mutate", "rule", "severity", "item", "period", "question"), CASES)
def test_rule_is_caught(mutate, rule: str, severity: str, item: int, period: int | None, question: int | None) -> None:
    item_id = _rows()[item]["id"]
    found = _violations(mutate)
    assert any(
        (v.rule, v.severity, v.item_id, v.period, v.question) == (rule, severity, item_id, period, question)
        for v in found
    ), [v.describe() for v in found]
    assert has_errors(found) == (severity == "error")


def test_stale_exposure_of_unasked_variable_is_only_a_warning() -> None:
    def mutate(rows: list[dict]) -> None:
        rows[0]["qas"][1]["required_info"] = ["budget", "training_goal"]
        for choice in rows[0]["qas"][1]["answer_choices"]:
            choice["state"][1] = "half marathon"
        rows[0]["qas"][1]["answer_choices"][1]["state"] = ["tight", "first 10k race"]
        rows[0]["periods"][2]["sessions"][0]["exposed_states"] = {"commute": "car"}

    found = _violations(mutate)
    stale = [v for v in found if v.rule == "exposure"]
    assert stale and all(v.severity == "warning" for v in stale), [v.describe() for v in found]


def test_describe_names_item_period_and_question() -> None:
    line = Violation(item_id="u1", period=3, question=7, rule="gold", message="no match").describe()
    assert line == "ERROR [gold] item u1, period 3, question 7: no match"


def test_ids_that_share_a_run_folder_collide() -> None:
    def mutate(rows: list[dict]) -> None:
        rows[0]["id"], rows[1]["id"] = "a/b", "a_b"

    found = [v for v in _violations(mutate) if v.rule == "item-id" and v.severity == "error"]
    assert len(found) == 1 and "['a/b', 'a_b'] collide" in found[0].message and "users/a_b" in found[0].message
