"""The ``memevo`` package itself: the API at the top level, loaded only when asked for, a version, and the marker
that tells type checkers the package is typed."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

import memevo


def test_optimize_and_evaluate_are_at_the_top_level() -> None:
    from memevo.evolve import api

    assert memevo.optimize is api.optimize and memevo.evaluate is api.evaluate
    assert memevo.__version__ == version("memevo")


def test_importing_the_agents_does_not_import_the_optimizer() -> None:
    code = "import sys, memevo.agents.policy; print(sorted(m for m in sys.modules if m.startswith('memevo.evolve')))"
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert shown.stdout.strip() == "[]"


def test_the_package_says_it_is_typed() -> None:
    assert (Path(memevo.__file__).parent / "py.typed").is_file()


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="optimise"):
        memevo.optimise  # type: ignore[attr-defined]  # noqa: B018
