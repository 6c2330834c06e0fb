"""The one registry shape: lazy targets, decorators, plug-ins from entry points, and names checked when built."""

from __future__ import annotations

from importlib.metadata import EntryPoint

import pytest

from memevo.core import registry as registry_module
from memevo.core.errors import UserInputError
from memevo.core.registry import Registry


def test_a_lazy_target_is_imported_on_first_use_only():
    table: Registry[type] = Registry("thing", {"ordered": "collections:OrderedDict"})
    assert table.names() == ["ordered"]
    assert "ordered" not in table._loaded
    from collections import OrderedDict

    assert table.get("ordered") is OrderedDict
    assert "ordered" in table._loaded


def test_an_unknown_name_lists_the_known_ones_and_names_the_field():
    table: Registry[type] = Registry("proposer", {"b": "collections:deque", "a": "collections:Counter"})
    with pytest.raises(UserInputError) as error:
        table.get("zzz", field="strategy.proposers")
    assert error.value.field == "strategy.proposers"
    assert "unknown proposer 'zzz' (known: a, b)" in str(error.value)


def test_a_missing_module_is_one_line_not_a_traceback():
    table: Registry[type] = Registry("tracker", {"gone": "memevo_no_such_module.sub:Thing"})
    with pytest.raises(UserInputError, match="tracker 'gone' is not available in this installation"):
        table.get("gone")


def test_a_module_failing_inside_is_not_hidden():
    table: Registry[type] = Registry("tracker", {"broken": "memevo.core.registry:NoSuchAttribute"})
    with pytest.raises(AttributeError):
        table.get("broken")


def test_the_decorator_registers_and_a_second_registration_replaces():
    table: Registry[type] = Registry("strategy")

    @table.decorator("race")
    class First:
        pass

    assert table.get("race") is First

    class Second:
        pass

    table.register("race", Second)
    assert table.get("race") is Second
    assert "race" in table and list(table) == ["race"]


def test_plug_ins_come_from_the_entry_point_group_once_and_builtins_win(monkeypatch):
    calls = []

    def fake_entry_points(*, group: str) -> list[EntryPoint]:
        calls.append(group)
        return [EntryPoint("extra", "collections:ChainMap", group), EntryPoint("own", "collections:deque", group)]

    monkeypatch.setattr("importlib.metadata.entry_points", fake_entry_points)
    table: Registry[type] = Registry("agent kind", {"own": "collections:Counter"}, entry_point_group="memevo.test")
    from collections import ChainMap, Counter

    assert table.get("extra") is ChainMap
    assert table.get("own") is Counter
    assert table.names() == ["extra", "own"]
    assert calls == ["memevo.test"]
    assert registry_module.Registry is Registry
