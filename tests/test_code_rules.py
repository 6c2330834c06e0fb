"""Project rules that code review alone would let slip: ruff's lint and import order, the layer order, and how
models are declared."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LAYERS = ("core", "agents", "environments", "evolve")
"""Lower layers first: a module may import its own layer and those before it, never one after it."""
FOLDERS = {"core": REPO / "agents" / "core", "agents": REPO / "agents", "environments": REPO / "environments",
           "evolve": REPO / "evolve"}
"""Where each layer's modules live: ``memevo.core`` sits in ``agents/core/`` (setup.py), and is not part of agents."""


def _layer_files(layer: str) -> list[Path]:
    paths = sorted(FOLDERS[layer].rglob("*.py"))
    return paths if layer == "core" else [path for path in paths if FOLDERS["core"] not in path.parents]


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
        for path in _layer_files(layer)
        for name in _imported_modules(path)
        if name.startswith(forbidden)
    }
    assert not offenders, sorted(offenders)


ENGINE = ("loop.py", "in_episode.py", "evaluation.py", "candidates.py", "scheduling.py", "spend.py", "events.py",
          "final_scoring.py", "runtime.py", "tuner.py", "selection", "proposers", "strategies")
"""The evolution engine (under ``evolve/``): it emits events (``events.py``) and never talks to a display or a tracker;
the run gets its tracker by the name its config gives (``plugins.py``), and the tuner tells its own trials."""
NOT_IN_THE_ENGINE = ("mlflow", "matplotlib", "tqdm", "memevo.evolve.presentation", "memevo.evolve.tracking",
                     "memevo.evolve.observers", "memevo.environments.progress", "memevo.environments.plots",
                     "memevo.environments.plot_process")
"""Presentation (terminal lines, progress bars, plots) and tracking (MLflow runs) live behind the observers."""


def _engine_files() -> list[Path]:
    paths = [REPO / "evolve" / name for name in ENGINE]
    return sorted(file for path in paths for file in (path.rglob("*.py") if path.is_dir() else [path]))


def test_the_engine_imports_no_presentation_and_no_tracker():
    files = _engine_files()
    assert len(files) > len(ENGINE), files  # the packages' modules are found
    offenders = {
        f"{path.relative_to(REPO)} imports {name}"
        for path in files
        for name in _imported_modules(path)
        if name in NOT_IN_THE_ENGINE or name.startswith(tuple(f"{module}." for module in NOT_IN_THE_ENGINE))
    }
    assert not offenders, sorted(offenders)


LIVE_ENGINE = ("memevo.evolve.evaluation", "memevo.evolve.tuner", "memevo.evolve.runtime", "memevo.evolve.loop",
               "memevo.evolve.candidate_records")
"""The engine's live objects (the evaluator, the tuner, the run) and what reads them: observers get records in the
events and values in ``RunContext`` instead."""


def test_observers_and_tracking_payloads_import_no_live_engine_object(tmp_path: Path):
    files = sorted([*(REPO / "evolve" / "observers").rglob("*.py"), *(REPO / "evolve" / "tracking").rglob("*.py")])
    offenders = {f"{path.relative_to(REPO)} imports {name}" for path in files for name in _imported_modules(path)
                 if name in LIVE_ENGINE}
    assert not offenders, sorted(offenders)
    planted = tmp_path / "observer.py"
    planted.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from memevo.evolve.evaluation import "
                       "Evaluator\n", encoding="utf-8")
    assert LIVE_ENGINE[0] in _imported_modules(planted)  # a type-only import counts too


def _module_name(layer: str, path: Path) -> str:
    return ".".join(("memevo", layer, *path.relative_to(FOLDERS[layer]).with_suffix("").parts)).removesuffix(".__init__")


def _import_graph() -> dict[str, set[str]]:
    """Every memevo module and the memevo modules it imports, type-only and function-level imports included."""
    names = {_module_name(layer, path): path for layer in LAYERS for path in _layer_files(layer)}
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        imported = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                imported |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
            elif isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names}
        graph[name] = {module for module in imported if module in names and module != name}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected groups of more than one module (each holds an import circle)."""
    reaches = {name: set(graph[name]) for name in graph}
    changed = True
    while changed:
        changed = False
        for name in graph:
            more = set().union(*(reaches[module] for module in reaches[name])) - reaches[name]
            if more:
                reaches[name] |= more
                changed = True
    groups = {frozenset({name} | {other for other in reaches[name] if name in reaches[other]}) for name in graph
              if name in reaches[name]}
    return [set(group) for group in groups]


def test_no_import_circle_among_memevo_modules():
    graph = _import_graph()
    assert {"memevo.core.registry", "memevo.agents.registry", "memevo.environments.protocol",
            "memevo.evolve.events"} <= set(graph)
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]  # the finder finds one
    circles = [sorted(group) for group in _circles(graph)]
    assert not circles, circles


TRACKER_FREE = ("ablation", "cli")
"""Folders under ``evolve/`` that reach the tracker through its plug-in only (``observers/tracker.py``): the ablation
through its observer (``evolve/ablation/events.py``), ``memevo ui`` through its UI (``observers/tracker_ui.py``)."""


def _tracker_free_files() -> list[Path]:
    return sorted(file for folder in TRACKER_FREE for file in (REPO / "evolve" / folder).rglob("*.py"))


def test_the_ablation_and_the_command_line_import_no_mlflow():
    files = _tracker_free_files()
    assert len(files) > len(TRACKER_FREE), files
    offenders = {
        f"{path.relative_to(REPO)} imports {name}"
        for path in files
        for name in _imported_modules(path)
        if name == "mlflow" or name.startswith("mlflow.")
    }
    assert not offenders, sorted(offenders)


def test_loading_the_ablation_and_the_command_line_loads_no_mlflow():
    """Also what they import at their top: MLflow loads only when a tracker implementation is opened."""
    modules = [".".join(("memevo", *path.relative_to(REPO).with_suffix("").parts)).removesuffix(".__init__")
               for path in _tracker_free_files() if path.stem != "__main__"]
    code = f"import importlib, sys\nfor name in {modules!r}:\n    importlib.import_module(name)\nprint('mlflow' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "memevo.evolve.ablation.run" in modules and "memevo.evolve.cli.ui_server" in modules
    assert result.stdout.strip() == "False"


def test_ruff_lint_and_import_order_pass():
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    assert ruff is not None, "ruff is part of the test extra: pip install -e '.[test]'"
    result = subprocess.run([ruff, "check", "--no-cache", "."], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def _sources() -> list[Path]:
    return sorted(path for layer in LAYERS for path in _layer_files(layer))


def _tree(path: Path) -> ast.AST:
    return ast.parse(path.read_text(encoding="utf-8"))


def test_models_derive_from_lazy_model():
    """memevo's pydantic models build their validators on first use (agents/core/lazy_model.py): one deriving from
    ``BaseModel`` itself would be built at import again, by every command that imports it."""
    offenders = [
        f"{path.relative_to(REPO)}:{node.lineno} {node.name}"
        for path in _sources() if path != REPO / "agents" / "core" / "lazy_model.py"
        for node in ast.walk(_tree(path)) if isinstance(node, ast.ClassDef)
        for base in node.bases
        if (base.id if isinstance(base, ast.Name) else getattr(base, "attr", None)) == "BaseModel"
    ]
    assert not offenders, offenders


def test_no_builtin_default_factory_in_model_fields():
    """``Field(default_factory=list)`` makes pydantic compile ``tokenize``'s patterns when it builds the model (~20 ms,
    see agents/core/lazy_model.py); a mutable default written as a value is copied for each instance all the same."""
    builtins = {"list", "dict", "set", "tuple", "frozenset"}
    offenders = [
        f"{path.relative_to(REPO)}:{node.lineno}"
        for path in _sources()
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Field"
        for keyword in node.keywords
        if keyword.arg == "default_factory" and isinstance(keyword.value, ast.Name) and keyword.value.id in builtins
    ]
    assert not offenders, offenders
