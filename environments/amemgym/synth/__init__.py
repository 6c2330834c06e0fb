"""Procedural, offline generator of AMemGym-compatible data (no LLM; seeded and byte-reproducible).

``SynthConfig`` and ``synthesize`` load on first use: the template user simulator needs only
``synth.vocabulary``, and importing the generator with it would delay every ``memevo eval`` start.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memevo.environments.amemgym.synth.config import SynthConfig
    from memevo.environments.amemgym.synth.generator import synthesize

__all__ = ["SynthConfig", "synthesize"]
_HOMES = {"SynthConfig": "memevo.environments.amemgym.synth.config",
          "synthesize": "memevo.environments.amemgym.synth.generator"}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
