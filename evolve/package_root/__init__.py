"""memevo's top level: ``memevo.optimize`` and ``memevo.evaluate`` (from ``memevo.evolve.api``) and ``__version__``.

Installed as the ``memevo`` package by setup.py. The two calls load on first use (``__getattr__``), so
``import memevo.agents`` stays as light as before and does not import the optimizer."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memevo.evolve.api import EvaluationResult, OptimizationResult, evaluate, optimize

__all__ = ["EvaluationResult", "OptimizationResult", "__version__", "evaluate", "optimize"]

try:
    __version__ = version("memevo")
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"


def __getattr__(name: str) -> Any:
    if name in {"evaluate", "optimize", "EvaluationResult", "OptimizationResult"}:
        from memevo.evolve import api

        return getattr(api, name)
    raise AttributeError(f"module 'memevo' has no attribute {name!r}")
