"""Lines that say what a generation will try and what the libraries said meanwhile.

Each planned candidate gets one line: its prompt change (the components rewritten, or "hyperparameters only") and
the values Optuna drew for it, each marked when it equals the parent's, so a candidate that only repeats its parent's
settings is seen as such. Library warnings went to the run's log; the one a user can act on (the proposer's reply cut
at its token cap) is said in memevo's words, naming the setting to raise.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from memevo.evolve.candidates import Candidate

SAME_AS_PARENT = " (= parent)"


def prompt_change(candidate: Candidate, parent: Candidate) -> str:
    """The components whose text differs from the parent's (and the proposer that wrote them)."""
    ours, theirs = candidate.policy.prompts, parent.policy.prompts
    rewritten = sorted(name for name in ours.keys() | theirs.keys() if ours.get(name) != theirs.get(name))
    if not rewritten:
        return "hyperparameters only"
    by = f" by {candidate.proposer}" if candidate.proposer else ""
    return f"{', '.join(rewritten)} rewritten{by}"


def drawn_values(candidate: Candidate, parent: Candidate, tuned: Sequence[str]) -> str:
    """The values of the tuned hyperparameters Optuna drew for ``candidate``, each equal to the parent's marked."""
    if not tuned:
        return "no hyperparameter is tuned"
    if candidate.trial_number is None:
        return "no Optuna trial: the parent's hyperparameters"
    values = []
    for name in tuned:
        value = getattr(candidate.policy, name)
        values.append(f"{name}={value}{SAME_AS_PARENT if value == getattr(parent.policy, name) else ''}")
    return f"Optuna trial {candidate.trial_number} drew {' '.join(values)}"


def candidate_line(candidate: Candidate, parent: Candidate, tuned: Sequence[str]) -> str:
    """``gen 1 g1c0-3f2a9b1c: write_prompt rewritten by reflection; Optuna trial 4 drew short_term=2 update_every=2
    (= parent)``."""
    return (f"gen {candidate.generation} {candidate.label}: {prompt_change(candidate, parent)}; "
            f"{drawn_values(candidate, parent, tuned)}")


def truncation_line(generation: int, new: int, total: int, max_tokens: int, log: Path) -> str:
    """The proposer's replies cut at their token cap while a generation was planned (DSPy's truncation notices)."""
    return (f"gen {generation}: the proposer's reply was cut at its token cap (llm.proposer.max_tokens={max_tokens}) "
            f"{new} time(s), {total} so far: a cut reply may lose its rewrite; raise the cap (details in {log})")


def library_warnings_line(count: int, log: Path) -> str:
    """How many warnings the libraries (DSPy, LiteLLM, Optuna, MLflow, httpx, Python's warnings) wrote to the log."""
    return f"{count} warning(s) from libraries (DSPy, LiteLLM, Optuna, MLflow, httpx) are in {log}"
