"""Registering a TEST DOUBLE under a name of a memevo registry for one test only."""

from __future__ import annotations

from typing import Any

import pytest

from memevo.core.registry import Registry


def isolate(monkeypatch: pytest.MonkeyPatch, registry: Registry[Any]) -> None:
    """Whatever the test registers in ``registry`` leaves with the test."""
    for attribute in ("_targets", "_loaded"):
        monkeypatch.setattr(registry, attribute, dict(getattr(registry, attribute)))


def register_for_test(monkeypatch: pytest.MonkeyPatch, registry: Registry[Any], name: str, target: Any) -> None:
    """``registry`` answers ``name`` with ``target`` (an object or ``"module:attribute"``) until the test ends."""
    isolate(monkeypatch, registry)
    registry.register(name, target)
