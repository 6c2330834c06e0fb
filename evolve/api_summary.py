"""``memevo.optimize``'s result as a few lines a person reads (``print(result)``, a notebook cell) instead of a dump
of every field: seed against best on the held-out test users, what the best one changed, what the run cost, and
the command that opens its MLflow runs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from memevo.agents.llm.accounting import UsageReport, dollars_text
from memevo.environments.metrics import Scores
from memevo.evolve.api_outcomes import CandidateRow, decision_counts
from memevo.evolve.candidates import Candidate
from memevo.evolve.stats import PairedTest, fmt, fmt_p


class Optimized(Protocol):
    """What the summary reads of ``memevo.evolve.api.OptimizationResult`` (which uses this module)."""

    @property
    def seed(self) -> Candidate: ...
    @property
    def best(self) -> Candidate: ...
    @property
    def seed_test_scores(self) -> Scores: ...
    @property
    def best_test_scores(self) -> Scores: ...
    @property
    def test_comparison(self) -> PairedTest: ...
    @property
    def candidates(self) -> Sequence[Candidate]: ...
    @property
    def candidate_rows(self) -> Sequence[CandidateRow]: ...
    @property
    def generations(self) -> Sequence[object]: ...
    @property
    def stop_reason(self) -> str: ...
    @property
    def objective(self) -> str: ...
    @property
    def usage(self) -> UsageReport: ...
    @property
    def run_dir(self) -> Path: ...
    @property
    def mlflow(self) -> object | None: ...


def summary_lines(result: Optimized, code: Callable[[str], str] = str) -> list[str]:
    """One line per finding; a figure that cannot be given is ``n/a`` with its reason. ``code`` marks a command."""
    test, objective = result.test_comparison, result.objective

    def value(scores_of: str) -> str:
        scores = getattr(result, scores_of)
        return fmt(scores.accuracy if objective == "accuracy" else scores.memory_score,
                   reason="undefined on these users")

    explained = test.t_reason or test.wilcoxon_reason  # the note would say it again
    note = f" ({test.note})" if test.note and not explained else ""
    spent = result.usage.total()
    return [
        f"memevo.optimize: {len(result.candidates)} candidate(s) over {len(result.generations)} generation(s) "
        f"({decision_counts(result.candidate_rows)}); stopped: {result.stop_reason}",
        f"test {objective}: seed {value('seed_test_scores')} -> best {value('best_test_scores')} "
        f"({result.best.label})",
        f"best - seed: {fmt(test.mean_diff)} [{fmt(test.diff_low)}, {fmt(test.diff_high)}] over {test.n} test "
        f"user(s); paired t p {fmt_p(test.t_p, test.t_reason)}, Wilcoxon p "
        f"{fmt_p(test.wilcoxon_p, test.wilcoxon_reason)}{note}",
        _changes_line(result),
        f"cost: {spent.calls - spent.cache_hits} call(s) sent ({spent.cache_hits} cached), "
        f"{spent.prompt_tokens + spent.completion_tokens} tokens, {dollars_text(spent)}; per candidate in "
        "candidate_rows (cost_calls, cost_tokens, cost_dollars)",
        _mlflow_line(result, code),
    ]


def _changes_line(result: Optimized) -> str:
    if result.best.id == result.seed.id:
        return "best is the seed: no candidate replaced it"
    changes = "; ".join(result.best.changes) or "(the proposer stated none)"
    return f"best's changes: {changes}"


def _mlflow_line(result: Optimized, code: Callable[[str], str]) -> str:
    if result.mlflow is None:
        return "MLflow: n/a (tracking is off in the config)"
    return "MLflow: " + code(f"memevo ui --run-dir {result.run_dir}")


def summary_markdown(result: Optimized) -> str:
    """The summary as a Markdown list, the command as code (how a notebook shows the result)."""
    return "\n".join(f"- {line}" for line in summary_lines(result, code=lambda command: f"`{command}`"))
