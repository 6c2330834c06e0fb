"""What the outer loop logs to MLflow: per-candidate metrics, params and artifacts, per-generation metrics.

The payloads are built here from the run's records (``events.CandidateRecord``: what the engine read of each
candidate's evaluations); ``store.Tracker`` writes them. Metric names keep the split and the objective in them
(``val_objective`` is the value the loop compared). Each quantity has one name: the headline figure is named by what
it is, once per run from the environment's questions (``score_text.data_figure_key``): ``val_accuracy`` when every
question is multiple choice, ``val_score_f1``, ``val_score_judge``... (a mean of per-question credit, named by the
credit) otherwise; the memory score is ``amemgym_memory_score`` (AMemGym's mean of cell ratios) or
``pooled_memory_score`` (pooled over the cells), never a bare ``memory_score``.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memevo.agents.base import AgentSpec
from memevo.agents.llm.accounting import UsageReport, dollars_cell
from memevo.environments.metrics import Scores
from memevo.environments.score_text import extra_metrics
from memevo.evolve.candidates import Candidate
from memevo.evolve.records import EvolutionResult, GenerationOutcome
from memevo.evolve.tracking.payloads import (
    COST_PREFIX,
    COUNTS_PREFIX,
    DIFF_ARTIFACT,
    EXPERIMENT_NOTE_TAG,
    cancelled_metric,
    candidate_diff,
    candidate_note,
    candidate_tags,
    cost_metrics,
)

if TYPE_CHECKING:
    from memevo.evolve.events import CandidateRecord

RESULTS_ARTIFACT = "results.csv"
"""A candidate's answers, one row per question of each train and validation user it finished, with its category and
its score (the credit in [0, 1], so a free-text answer's partial credit is not shown only as ``correct 0``)."""
CATEGORY_INFIX = "/category/"
"""Between a headline figure's name and a category's in the per-category metrics (``val_score/category/temporal``)."""
AMEMGYM_MEMORY = "amemgym_memory_score"
"""AMemGym's memory score, its mean of cell ratios (a cell: one user's period), also the objective of that name."""
POOLED_MEMORY = "pooled_memory_score"
"""The memory score pooled over the cells (the terminal's "memory score"), as ``score_text.extra_metrics`` names it."""
REFUSED_IN_NAMES = re.compile(r"[^\w\-. /]")
"""Characters MLflow refuses in a metric's name."""


def score_metrics(prefix: str, summary: Scores, figure: str) -> dict[str, float]:
    """The headline figure (named ``figure``), AMemGym's memory score (``amemgym_memory_score``, its mean of cell
    ratios), their per-period values, the failure split and the figures behind the memory score (cells, the pooled
    memory score ``pooled_memory_score``, memory gain, probe coverage, write failures) of one split's scores."""
    metrics: dict[str, float] = {f"{prefix}_{figure}": summary.accuracy}
    if summary.memory_score is not None:
        metrics[f"{prefix}_{AMEMGYM_MEMORY}"] = summary.memory_score
    for period in summary.per_period:
        metrics[f"{prefix}_{figure}_p{period.period:02d}"] = period.accuracy
        if period.memory_score is not None:
            metrics[f"{prefix}_{AMEMGYM_MEMORY}_p{period.period:02d}"] = period.memory_score
    if summary.failure is not None:
        metrics[f"{prefix}_write_failure"] = summary.failure.write
        metrics[f"{prefix}_read_failure"] = summary.failure.read
        metrics[f"{prefix}_utilization_failure"] = summary.failure.utilization
    metrics |= {f"{prefix}_{name}": value for name, value in extra_metrics(summary).items()}
    return metrics | category_metrics(f"{prefix}_{figure}", summary)


def category_metrics(name: str, summary: Scores) -> dict[str, float]:
    """The headline figure ``name`` of each benchmark category's questions (none when the benchmark has no
    categories), the name's characters MLflow refuses replaced by ``_``."""
    return {f"{name}{CATEGORY_INFIX}{REFUSED_IN_NAMES.sub('_', each.category)}": each.accuracy
            for each in summary.per_category}


def candidate_metrics(record: CandidateRecord, figure: str) -> dict[str, float]:
    """A candidate's figures from its record: whether it was pruned or gated, the objective of each evaluation, and
    ``score_metrics`` of the users each split's evaluation covered."""
    metrics: dict[str, float] = {"pruned": float(record.pruned), "gated": float(record.gated),
                                 "train_users_evaluated": record.train_users}
    metrics |= {f"{label}_objective": value for label, value in record.objectives.items()}
    for split, scores in record.scores.items():
        metrics |= score_metrics(split, scores, figure)
    return metrics


def completed_train_entry(record: CandidateRecord, figure: str) -> tuple[dict[str, float], dict[str, str]]:
    """The train scores and the answers table of a candidate that ran on the other train users when it became a
    parent (validation first): the metric names and the ``RESULTS_ARTIFACT`` its run would have had, had its
    generation run it on them all."""
    metrics: dict[str, float] = {"train_users_evaluated": record.train_users, "train_objective": record.objectives["train"]}
    if "train" in record.scores:
        metrics |= score_metrics("train", record.scores["train"], figure)
    return metrics, {RESULTS_ARTIFACT: table_csv(record.answers)}


def table_csv(rows: Sequence[Mapping[str, Any]]) -> str:
    """Rows of dicts as CSV text (header from the first row)."""
    if not rows:
        return ""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def candidate_entry(
    spec: AgentSpec,
    candidate: Candidate,
    parent: Candidate,
    record: CandidateRecord,
    feedback: str,
    *,
    outcome: GenerationOutcome,
    decision: str,
    figure: str,
) -> dict[str, Any]:
    """One candidate's MLflow run: its metrics, params, prompts, diff and answers from its ``record``, and the
    generation's ``decision`` (``decisions.generation_decisions``; also for a candidate the generation never ran)."""
    artifacts = {f"prompts/{c.name}.txt": candidate.policy.prompts.get(c.name, c.default) for c in spec.components}
    artifacts[DIFF_ARTIFACT] = candidate_diff(parent.policy, candidate.policy, spec.components,
                                              before_name=parent.label, after_name=candidate.label)
    artifacts["feedback.txt"] = feedback or "(seed: no feedback)"
    artifacts["changes.txt"] = "\n".join(candidate.changes) or "(none)"
    artifacts[RESULTS_ARTIFACT] = table_csv(record.answers)
    artifacts["policy.json"] = candidate.policy.model_dump_json(indent=2)
    tags = candidate_tags(candidate.id, kept_id=outcome.kept_id, generation=candidate.generation, origin=candidate.origin,
                          decision=decision)
    return {
        "label": candidate.label,
        "metrics": candidate_metrics(record, figure),
        "tags": tags | candidate_note(decision, label=candidate.label, parent_label=parent.label,
                                      changes=candidate.changes),
        "span": record.span,
        "params": {
            "candidate_id": candidate.id,
            "parent_id": candidate.parent_id,
            "origin": candidate.origin,
            "proposer": candidate.proposer,
            "other_parent_id": candidate.other_parent_id,
            "trial_number": candidate.trial_number,
            "update_every": candidate.policy.update_every,
            "short_term": candidate.policy.short_term,
            "top_k": candidate.policy.top_k,
        },
        "artifacts": artifacts,
    }


def generation_counts(outcome: GenerationOutcome, n_candidates: int, usage: UsageReport) -> dict[str, float]:
    """The generation's counts (under ``COUNTS_PREFIX``) and the run's usage so far (under ``COST_PREFIX``), each a
    section of its own in MLflow's charts; its scores: ``payloads.generation_metrics``."""
    counts = {
        "accepted": float(outcome.accepted),
        "n_accepted": len(outcome.accepted_ids),
        "n_candidates": n_candidates,
        "n_pruned": len(outcome.pruned),
        "n_gated": len(outcome.gated),
        "n_not_run": len(outcome.not_started) + len(outcome.not_needed),
        "proposals_rejected": outcome.stats.rejected,
        "proposals_repaired": outcome.stats.repaired,
        "proposals_repeated": outcome.stats.duplicates,
    }
    return {f"{COUNTS_PREFIX}{name}": value for name, value in counts.items()} | cost_metrics(usage)


TEST_PREFIX = "test/"
"""The held-out test's metrics, one section of MLflow's charts."""


def memory_tags(result: EvolutionResult) -> dict[str, str]:
    """The reason the test memory scores are missing from the metrics, as a tag the runs table can show."""
    reason = result.seed_scores.memory_na_reason or result.best_scores.memory_na_reason
    return {} if reason is None else {f"{TEST_PREFIX}memory_score": f"n/a ({reason})"}


def test_figures(result: EvolutionResult, figure: str) -> dict[str, float]:
    """The seed's and the best's headline figure on the test users, named ``figure``, overall and per category."""
    return {f"{TEST_PREFIX}seed_{figure}": result.seed_scores.accuracy,
            f"{TEST_PREFIX}best_{figure}": result.best_scores.accuracy,
            **category_metrics(f"{TEST_PREFIX}seed_{figure}", result.seed_scores),
            **category_metrics(f"{TEST_PREFIX}best_{figure}", result.best_scores)}


def _memory_figures(result: EvolutionResult) -> dict[str, float]:
    """The memory score pooled over the test users' cells (``pooled_memory_score``, the terminal's "memory score")
    and AMemGym's mean of cell ratios (``amemgym_memory_score``, the objective of that name), each when both arms
    have it."""
    seed, best = result.seed_scores, result.best_scores
    metrics: dict[str, float] = {}
    if seed.pooled_memory_score is not None and best.pooled_memory_score is not None:
        metrics |= {f"seed_{POOLED_MEMORY}": seed.pooled_memory_score, f"best_{POOLED_MEMORY}": best.pooled_memory_score}
    if seed.memory_score is not None and best.memory_score is not None:
        metrics |= {f"seed_{AMEMGYM_MEMORY}": seed.memory_score, f"best_{AMEMGYM_MEMORY}": best.memory_score}
    return {f"{TEST_PREFIX}{name}": value for name, value in metrics.items()}


def _difference_figures(result: EvolutionResult) -> dict[str, float]:
    """Best minus seed in the objective over the test users: mean, 95% t-interval and paired t p, each when defined
    (the parent run's description says n/a and why otherwise)."""
    from memevo.evolve.api_outcomes import paired_on_test_users  # scipy: not on the way to the first request

    test = paired_on_test_users(result.objective, result.seed_user_scores, result.best_user_scores)
    values = {"best_minus_seed": test.mean_diff, "best_minus_seed_low": test.diff_low,
              "best_minus_seed_high": test.diff_high, "paired_t_p": test.t_p}
    return {f"{TEST_PREFIX}{name}": value for name, value in values.items() if value is not None}


def final_metrics(result: EvolutionResult, figure: str) -> dict[str, float]:
    """The held-out test under ``TEST_PREFIX`` (``test_figures``, the difference, the memory figures), and the whole
    run's spend (the test users' and the judge's calls come after the last generation's row)."""
    return (test_figures(result, figure) | _difference_figures(result) | _memory_figures(result)
            | cost_metrics(result.usage) | cancelled_metric(result.usage))


def outcome_note(result: EvolutionResult) -> dict[str, str]:
    """The parent run's description (MLflow's overview shows it first): seed against best on the test users as the
    terminal's headline says it (intervals, paired p, memory score), then the run's cost."""
    from memevo.evolve.presentation.headline import held_out_lines  # scipy: not on the way to the first request

    headline = held_out_lines(result.objective, result.seed_scores, result.best_scores, result.seed_user_scores,
                              result.best_user_scores, environment=result.environment)
    total = result.usage.total()
    lines = [f"**{result.seed.label} -> {result.best.label}** (stopped: {result.stop_reason})", "", "```text",
             *headline, "```", "",
             f"Cost: {total.calls} calls, {total.prompt_tokens + total.completion_tokens} tokens, "
             f"{dollars_cell(total)} (per role: the `{COST_PREFIX}` metrics)"
             + (f"; {total.cancelled_calls} of the calls cancelled by the run (their cost is not known)."
                if total.cancelled_calls else ".")]
    return {EXPERIMENT_NOTE_TAG: "\n".join(lines)}


def in_episode_period_metrics(result: EvolutionResult, figure: str) -> list[tuple[int, dict[str, float]]]:
    """An in-episode run's per-period rows (step = period): the headline figure (named ``figure``) and AMemGym's
    memory score of the seed arm (``seed_...``), then of the evolving arm (``evolved_...``)."""
    rows = []
    for label, scores in (("seed", result.seed_scores), ("evolved", result.best_scores)):
        for period in scores.per_period:
            values = {f"{label}_{figure}": period.accuracy}
            if period.memory_score is not None:
                values[f"{label}_{AMEMGYM_MEMORY}"] = period.memory_score
            rows.append((period.period, values))
    return rows
