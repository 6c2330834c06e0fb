"""``memevo compare RUN_A RUN_B``: two finished evolutions side by side, from their records (no LLM calls): the best
prompts' differences, seed and best on each run's test users with 95% t-intervals over users, how many candidates
each decision state holds (from the runs' ``decisions.json``), and the spend."""

from __future__ import annotations

import difflib
from pathlib import Path

from memevo.core.errors import UserInputError
from memevo.evolve.api_outcomes import decision_counts, written_rows
from memevo.evolve.presentation.explain import spend_line
from memevo.evolve.presentation.headline import objective_interval
from memevo.evolve.records import EvolutionResult, read_written


def _result(run_dir: Path, field: str) -> EvolutionResult:
    path = run_dir / "result.json"
    if not path.exists():
        raise UserInputError("not a finished evolution (no result.json)", source=str(run_dir), field=field)
    return read_written(path, EvolutionResult, run_dir)


def _prompt_lines(a: EvolutionResult, b: EvolutionResult) -> list[str]:
    """A unified diff per prompt component the two best policies set differently."""
    lines: list[str] = []
    first, second = a.best.policy.prompts, b.best.policy.prompts
    for name in sorted(set(first) | set(second)):
        diff = list(difflib.unified_diff(first.get(name, "").splitlines(), second.get(name, "").splitlines(),
                                         fromfile=f"A {name}", tofile=f"B {name}", lineterm=""))
        lines += diff
    return lines or ["best prompts: the same"]


def _decision_counts(run_dir: Path, result: EvolutionResult) -> str:
    rows = written_rows(run_dir, result.seed)
    return f"{len(rows)} candidate(s): {decision_counts(rows)}"


def compare_runs(run_a: Path, run_b: Path) -> str:
    """The comparison text; a run's objective values are its own test users', so the intervals are not paired."""
    a, b = _result(run_a, "RUN_A"), _result(run_b, "RUN_B")
    lines = [f"A: {run_a} (best {a.best.id[:8]}, objective {a.objective}, stopped: {a.stop_reason})",
             f"B: {run_b} (best {b.best.id[:8]}, objective {b.objective}, stopped: {b.stop_reason})", ""]
    if a.objective != b.objective:
        lines.append(f"note: the runs' objectives differ ({a.objective} vs {b.objective}): their scores are not "
                     "comparable")
    lines.append("held-out test [95% t-intervals over users]:")
    for label, result in (("A", a), ("B", b)):
        seed = objective_interval(result.objective, result.seed_user_scores)
        best = objective_interval(result.objective, result.best_user_scores)
        lines.append(f"  {label}: seed {seed}, best {best} ({result.seed_scores.n_users} users)")
    lines += ["", "decisions (decisions.json):", f"  A: {_decision_counts(run_a, a)}",
              f"  B: {_decision_counts(run_b, b)}"]
    lines += ["", "spend:", f"  A: {spend_line(a.usage.total())}", f"  B: {spend_line(b.usage.total())}", "",
              *_prompt_lines(a, b)]
    return "\n".join(lines)
