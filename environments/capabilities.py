"""What an environment can measure and how it is played, declared once by each ``Environment`` class.

Every layer that used to test an environment's name (config checks, the runtime, ``memevo eval``, reports) asks
these instead, so a new benchmark is its module plus a registry entry: it declares what it has, and the options,
tables and figures it lacks are refused or printed ``n/a`` by the code that already exists.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Session = Literal["on_policy", "off_policy"]
"""on_policy: a user simulator plays the sessions live; off_policy: fixed sessions are replayed."""
Answers = Literal["choice", "free_text", "mixed"]
"""Multiple-choice questions only, free-text questions only, or both."""


@dataclass(frozen=True)
class Capabilities:
    """An environment's capabilities; the defaults are those of a replayed benchmark with free-text questions."""

    sessions: Session = "off_policy"
    """Simulator (played live) or replay (the item's own recorded sessions)."""
    answers: Answers = "free_text"
    upper_bound: bool = False
    """A perfect-information upper bound exists (the ``--upper-bound`` table, ``upper_bound: true``)."""
    random_baseline: bool = False
    """A random-guess score per question exists (multiple choice over the item's own options)."""
    no_memory_baseline: bool = False
    """The agent's LLM can be asked every question with no memory (``--no-memory-baseline``)."""
    diagnosis: bool = False
    """Memory probes split wrong answers into write, read and utilization failures (``--diagnose``)."""
    categories: bool = False
    """Questions carry the benchmark's categories: results per category."""
    procedural_worlds: bool = False
    """Items can be generated procedurally (``data.synth``, ``memevo env synth``)."""
    in_episode: bool = False
    """Questions after every period of one long episode, so a policy can evolve within it (``amemgym_period``)."""
    amemgym_protocol: bool = False
    """Plays AMemGym's protocol, whose own prompt texts and compat switches apply (``--amemgym-compat``,
    ``--amemgym-source``)."""
    options: tuple[str, ...] = ()
    """The environment's own settings: keyword arguments of its class (``--dialog-field``: ``dialog_field``)."""

    @property
    def memory_figures(self) -> bool:
        """The memory score (between the random baseline and the upper bound) and the failure split can exist."""
        return self.upper_bound and self.random_baseline and self.diagnosis

    @property
    def replays_recorded_runs(self) -> bool:
        """A live run's transcripts can be replayed to another agent (``--off-policy``)."""
        return self.sessions == "on_policy"
