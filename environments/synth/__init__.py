"""Procedural, offline generator of AMemGym-compatible data (no LLM; seeded and byte-reproducible)."""

from memevo.environments.synth.config import SynthConfig
from memevo.environments.synth.generator import synthesize

__all__ = ["SynthConfig", "synthesize"]
