"""Project rules that code review alone would let slip: ruff's lint and import order, and the layer order."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LAYERS = ("agents", "environments", "evolve")
"""Lower layers first: a module may import its own layer and those before it, never one after it."""


def _imported_modules(path: Path) -> set[str]:
    """Every module named by an import anywhere in the file, function-level (lazy) imports included."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize("layer", LAYERS[:-1])
def test_no_module_imports_a_later_layer(layer: str):
    forbidden = tuple(f"memevo.{later}" for later in LAYERS[LAYERS.index(layer) + 1 :])
    offenders = {
        f"{path.relative_to(REPO)} imports {name}"
        for path in sorted((REPO / layer).rglob("*.py"))
        for name in _imported_modules(path)
        if name.startswith(forbidden)
    }
    assert not offenders, sorted(offenders)


def test_ruff_lint_and_import_order_pass():
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    assert ruff is not None, "ruff is part of the test extra: pip install -e '.[test]'"
    result = subprocess.run([ruff, "check", "--no-cache", "."], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
