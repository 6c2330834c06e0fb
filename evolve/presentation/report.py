"""``memevo report RUN_DIR``: a finished (or interrupted) evolution or ablation, again, from its stored records.

Reads only files in the run folder (``result.json``, ``generations/*/outcome.json``, ``plan.json`` and
``decisions.json``, the one record of each candidate's decision, ``usage.jsonl``, ``config.json`` for an evolution; ``ablation.json`` and ``*/seed-*/arm_result.json`` for an ablation).
It never builds an LLM client, so it is free and works offline.
"""

from __future__ import annotations

from pathlib import Path

from memevo.agents.llm.accounting import UsageReport, dollars_text
from memevo.agents.registry import agent_spec
from memevo.core.errors import UserInputError
from memevo.core.run_files import read_json
from memevo.environments.metrics import Scores, UserScores
from memevo.environments.registry import DEFAULT_ENVIRONMENT, capabilities_of
from memevo.environments.rundir import LEDGER_FILE, read_ledger
from memevo.environments.score_text import (
    MEMORY_SCORE_SCALE,
    answers_text,
    benchmark_averages_text,
    failure_cell,
    figure_label,
    free_text,
)
from memevo.evolve.ablation.plots import plot_failure_split, plot_period_curves
from memevo.evolve.ablation.run import MANIFEST_FILE, load_manifest, render_ablation
from memevo.evolve.api_outcomes import CandidateRow, written_history, written_rows
from memevo.evolve.cross_test import cross_test_lines, read_cross_test
from memevo.evolve.loop import EvolutionResult, GenerationOutcome
from memevo.evolve.presentation.generation_plot import plot_score_per_generation
from memevo.evolve.presentation.headline import objective_label
from memevo.evolve.records import read_written, rewritten_by_resume
from memevo.evolve.stats import Interval, fmt, fmt_p, na, paired_test
from memevo.evolve.tracking.payloads import HYPERPARAMETERS, candidate_diff, generation_points, resolved_prompts

REPORT_DIR = "report"


def mlflow_ui_command(run_dir: Path) -> str:
    """The command that opens the MLflow UI on the store this run (evolution or ablation) logged to."""
    manifest = load_manifest(run_dir)
    if manifest is None:
        return f"memevo ui --run-dir {run_dir}"
    return f"memevo ui --tracking-uri {manifest.tracking_uri}"


def report_run(run_dir: Path) -> str:
    """The report text; plots are written under the run folder as a side effect."""
    if not run_dir.is_dir():
        raise UserInputError("no such run folder", source=str(run_dir))
    if (run_dir / MANIFEST_FILE).exists():
        return _ablation_report(run_dir)
    if (run_dir / "config.json").exists():
        return evolution_report(run_dir)
    raise UserInputError("neither an evolution (config.json) nor an ablation (ablation.json) folder", source=str(run_dir))


def _ablation_report(run_dir: Path) -> str:
    outcome = render_ablation(run_dir)
    manifest = load_manifest(run_dir)
    assert manifest is not None
    done = {(arm.arm, seed) for arm in outcome.summary.arms for seed in arm.seeds}
    missing = [f"{arm}/seed-{seed}" for arm in manifest.arms for seed in manifest.seeds if (arm, seed) not in done]
    lines = [outcome.outputs["markdown"].read_text(encoding="utf-8")]
    if missing:
        lines.append(f"Unfinished (run `memevo ablate CONFIG --run-dir {run_dir} --resume`): {', '.join(missing)}")
    lines.append("Files: " + ", ".join(str(path) for path in outcome.outputs.values()))
    lines.append(f"MLflow: {mlflow_ui_command(run_dir)}")
    return "\n".join(lines) + "\n"


def _history_table(history: list[GenerationOutcome], objective: str, scores: Scores | None) -> list[str]:
    lines = [
        "| generation | kept | improved | best train | best val | kept val (running best) | candidates | pruned "
        "| rejected proposals |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in history:
        lines.append(
            f"| {row.generation} | {row.kept_id[:8]} | {'yes' if row.accepted and row.generation else 'no'} "
            f"| {fmt(max(row.train.values(), default=None))} | {fmt(max(row.val.values(), default=None))} "
            f"| {fmt(row.parent_val)} | {len({*row.train, *row.val, *row.gated})} | {len(row.pruned)} "
            f"| {row.stats.rejected} |"
        )
    lines += ["", f"Scores are the run's objective, {objective_label(objective, scores)}, averaged over (user, period) cells. *best val* is n/a "
              "when every candidate of the generation was pruned on the training users before validation; *kept val* is the score of the candidate carried "
              "forward, which changes only when a candidate beats it on validation. *best train* covers only "
              "candidates run on all training users: validation first, the others' training score is not measured "
              "(n/a when none was). *candidates* counts those run: validation first, a generation ends at its first "
              "kept candidate and the proposals after it are not run."]
    return lines


def _candidate_table(rows: list[CandidateRow]) -> list[str]:
    """Each candidate's scores, cost and decision, in the words its generation's ``decisions.json`` records (the
    terminal's, MLflow's and Optuna's words too)."""
    lines = ["| candidate | origin | train | val | cost | decision |", "|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row.label} | {row.origin} | {fmt(row.train, reason='not measured')} "
                     f"| {fmt(row.val, reason='not measured')} | {_cost_cell(row)} | {row.fate.replace('|', '/')} |")
    return lines


def _cost_cell(row: CandidateRow) -> str:
    if row.cost_calls is None:
        return na("no evaluation of it ended")
    dollars = "unpriced" if row.cost_dollars is None else f"${row.cost_dollars:.4f}"
    return f"{row.cost_calls} calls, {dollars}"


AMEMGYM_ONLY_COLUMNS = ("memory score (pooled)", "AMemGym memory score (cells used/all)",
                        "write / read / utilization failures")
"""Figures only AMemGym measures: the memory scores rest on its upper bound and the failure split on its probes."""


def score_header(scores: Scores, amemgym: bool = True) -> list[str]:
    """The seed-vs-best table's header: accuracy, or the score named by its credit (``score (F1)``) once free text
    is scored; the AMemGym-only columns on AMemGym runs only."""
    figure = figure_label(scores)
    memory, failures = (AMEMGYM_ONLY_COLUMNS[:2], AMEMGYM_ONLY_COLUMNS[2:]) if amemgym else ((), ())
    columns = ["candidate", "test users", figure, "random", *memory, "format errors", *failures,
               f"{figure} per period"]
    return ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]


def _memory_cell(value: float | None, scores: Scores, cells: str = "") -> str:
    if value is None:
        return na(scores.memory_na_reason or "")
    return f"{fmt(value)}{cells}"


def _scores_line(label: str, scores: Scores, amemgym: bool = True) -> str:
    cells = f" ({scores.n_memory_points}/{scores.n_memory_points + scores.n_excluded})"
    memory = [_memory_cell(scores.pooled_memory_score, scores), _memory_cell(scores.memory_score, scores, cells)]
    failures = [failure_cell(scores)]
    if not amemgym:
        memory, failures = [], []
    row = [label, str(scores.n_users), fmt(scores.accuracy), fmt(scores.random_baseline, reason="free-text answers"),
           *memory, fmt(scores.format_error_rate), *failures, " ".join(fmt(p.accuracy, 2) for p in scores.per_period)]
    return "| " + " | ".join(row) + " |"


def _score_notes(result: EvolutionResult, amemgym: bool = True) -> list[str]:
    notes = [f"Memory score: {MEMORY_SCORE_SCALE}; below 0 is worse than random guessing. The pooled memory score "
             "is (sum of accuracy - sum of random) / (sum of upper bound - sum of random) over all questions; "
             "AMemGym's is the mean of per-(user, period) ratios over the cells whose upper bound differs from random "
             "(cells used/all), reported for comparison with published figures. Both are n/a, with the reason, when "
             "the upper bound's 95% lower bound (Wilson) is not above random or over 20% of its replies are unreadable."
             ] if amemgym else [f"Environment {result.environment}: no memory score and no write / read / utilization "
                                "split (both are AMemGym's: its upper bound and its memory probes)."]
    notes += [f"Note ({label}): {scores.answer_collapse}." for label, scores in
              (("seed", result.seed_scores), ("best", result.best_scores)) if scores.answer_collapse]
    if free_text(result.seed_scores):
        notes.append(f"Score: the {result.seed_scores.score_meaning} (each question's credit in [0, 1]), not a "
                     f"share of questions answered right. {(answers_text(result.seed_scores) or '').capitalize()}.")
    notes += [f"{label.capitalize()}: {text}." for label, scores in (("seed", result.seed_scores),
                                                                     ("best", result.best_scores))
              for text in [benchmark_averages_text(scores)] if text]
    if amemgym:
        notes.append("Write / read / utilization failures are shares of all questions that failed because the fact "
                     "never reached memory, was in memory but not retrieved, or was retrieved but not used (AMemGym's "
                     "diagnosis; n/a without `episode.diagnose: true`).")
    return notes


def _category_lines(result: EvolutionResult) -> list[str]:
    """Seed and best per benchmark category (none when the environment has no categories)."""
    seed = {c.category: c for c in result.seed_scores.per_category}
    best = {c.category: c for c in result.best_scores.per_category}
    if not seed and not best:
        return []
    figure = figure_label(result.seed_scores)
    lines = [f"| category | questions | seed {figure} | best {figure} |", "| --- | --- | --- | --- |"]
    for name in [*seed, *(name for name in best if name not in seed)]:
        mine, theirs = seed.get(name), best.get(name)
        n = seed[name].n_questions if name in seed else best[name].n_questions
        lines.append(f"| {name} | {n} | {fmt(mine.accuracy if mine else None, reason='not asked')} "
                     f"| {fmt(theirs.accuracy if theirs else None, reason='not asked')} |")
    return [*lines, ""]


def _paired_lines(seed: list[UserScores], best: list[UserScores], figure: str, amemgym: bool = True) -> list[str]:
    """Best minus seed per test user, for the headline figure (named ``figure``) and, on AMemGym, its memory score."""
    lines = []
    metrics = ((figure, lambda u: u.accuracy), ("AMemGym memory score", lambda u: u.memory_score))
    for metric, pick in metrics[:2 if amemgym else 1]:
        a = {u.user_id: pick(u) for u in seed if pick(u) is not None}
        b = {u.user_id: pick(u) for u in best if pick(u) is not None}
        test = paired_test(a, b)
        lines.append(
            f"- {metric}: best - seed = {fmt(test.mean_diff)} [{fmt(test.diff_low)}, {fmt(test.diff_high)}] over "
            f"{test.n} test users; paired t p = {fmt_p(test.t_p)}, Wilcoxon p = {fmt_p(test.wilcoxon_p)}"
            + (f" ({test.note})" if test.note else "")
        )
    return lines


def _spend_lines(usage: UsageReport) -> list[str]:
    lines = ["| role | calls | cached | prompt tokens | completion tokens | dollars |", "|---|---|---|---|---|---|"]
    for role, spent in [*sorted(usage.by_role.items()), ("total", usage.total())]:
        lines.append(
            f"| {role} | {spent.calls} | {spent.cache_hits} | {spent.prompt_tokens} | {spent.completion_tokens} "
            f"| {dollars_text(spent)} |"
        )
    if usage.by_endpoint:  # requests by server: how llm.extra_base_urls spread the load
        lines += ["", "| server | requests | failed attempts | prompt tokens | completion tokens |", "|---|---|---|---|---|"]
        lines += [f"| {url} | {sent.requests} | {sent.failures} | {sent.prompt_tokens} | {sent.completion_tokens} |"
                  for url, sent in sorted(usage.by_endpoint.items())]
    return lines


def _best_candidate_lines(result: EvolutionResult) -> list[str]:
    """The best candidate's hyperparameters next to the seed's, its evolved prompt texts, and the diff."""
    if result.protocol == "amemgym_period":
        return ["The in-episode protocol evolves each user's prompt during the episode; there is no single best "
                "prompt (see each user's run folder)."]
    seed, best = result.seed.policy, result.best.policy
    components = agent_spec(best.kind).components
    lines = [f"## Best candidate {result.best.id[:8]} (seed {result.seed.id[:8]})", "",
             "| hyperparameter | seed | best |", "|---|---|---|"]
    lines += [f"| {name} | {getattr(seed, name)} | {getattr(best, name)} |" for name in HYPERPARAMETERS]
    old, new = resolved_prompts(seed, components), resolved_prompts(best, components)
    for name in [name for name in new if new[name] != old[name]]:
        lines += ["", f"### {name} (evolved)", "", "```text", new[name].rstrip("\n"), "```"]
    lines += ["", *candidate_diff(seed, best, components, before_name="seed", after_name="best", level=3).splitlines()]
    lines += ["", "The whole policy is `best_policy.json` on the MLflow parent run; `memevo eval --agent "
              "best_policy.json ...` scores it on other data."]
    return lines


def _point(value: float | None) -> Interval:
    return Interval(mean=value, low=None, high=None, n=1, method="t")


def _evolution_plots(result: EvolutionResult, history: list[GenerationOutcome], out_dir: Path,
                     amemgym: bool = True) -> list[Path]:
    # One scale for the whole figure: the pooled memory score only where every period can measure it.
    has_memory = all(p.pooled_memory_score is not None
                     for p in result.best_scores.per_period + result.seed_scores.per_period)
    curves = {
        label: [_point(p.pooled_memory_score if has_memory else p.accuracy) for p in scores.per_period]
        for label, scores in (("seed", result.seed_scores), ("best", result.best_scores))
    }
    split = {
        label: (s.failure.write, s.failure.read, s.failure.utilization) if s.failure else (None,) * 3
        for label, s in (("seed", result.seed_scores), ("best", result.best_scores))
    }
    ylabel = ("memory score, pooled (0 = random, 1 = upper bound)" if has_memory
              else f"{figure_label(result.seed_scores)} (mean per-question credit)" if free_text(result.seed_scores)
              else "accuracy (share of questions right)")
    plots = [plot_period_curves(curves, out_dir, "test_periods.png", ylabel=ylabel, memory_score=has_memory,
                                title=f"Seed vs best on {result.best_scores.n_users} test user(s), per period")]
    if amemgym:
        plots.append(plot_failure_split(
            split, out_dir, "test_failures.png", title="Why test questions failed: seed vs best",
            notes={"seed": failure_cell(result.seed_scores), "best": failure_cell(result.best_scores)}))
    if history:
        plots.append(plot_score_per_generation(
            generation_points(history), out_dir, title="Score per generation (training and validation users)",
            objective=result.objective, random_baseline=result.seed_scores.random_baseline, upper_bound=result.seed_scores.upper_bound,
            reference_users="test users",
        ))
    return plots


def _cross_lines(run_dir: Path) -> list[str]:
    cross = read_cross_test(run_dir)
    return [] if cross is None else [*cross_test_lines(cross), ""]


def evolution_report(run_dir: Path) -> str:
    """History, seed vs best on the test users (with a paired test), the best candidate, spend; writes plots
    to ``report/``."""
    config = read_json(run_dir / "config.json", remedy=rewritten_by_resume(run_dir))
    history = written_history(run_dir)
    environment = config.get("environment", DEFAULT_ENVIRONMENT)
    lines = [f"# Evolution: {config.get('name', run_dir.name)} ({config.get('protocol', 'outer_loop')}, "
             f"environment {environment})", ""]
    result_path = run_dir / "result.json"
    result = read_written(result_path, EvolutionResult, run_dir) if result_path.exists() else None
    if history:
        scores = None if result is None else result.seed_scores
        lines += _history_table(history, config.get("objective", "accuracy"), scores) + [""]
        rows = written_rows(run_dir, None if result is None else result.seed)  # unfinished: the seed is not known yet
        lines += ["## Candidates", "", *_candidate_table(rows), ""]
    if result is None:
        lines.append(f"Unfinished: no result.json yet. Continue it with `memevo evolve CONFIG --run-dir {run_dir} --resume`.")
        ledger = run_dir / LEDGER_FILE
        if ledger.exists():
            lines += ["", *_spend_lines(read_ledger(ledger))]
        return "\n".join(lines) + "\n"
    best_label = "evolving (per user)" if result.protocol == "amemgym_period" else f"best {result.best.id[:8]}"
    memory_figures = capabilities_of(result.environment).memory_figures
    lines += [
        f"Stopped: {result.stop_reason}",
        "",
        *score_header(result.seed_scores, memory_figures),
        _scores_line(f"seed {result.seed.id[:8]}", result.seed_scores, memory_figures),
        _scores_line(best_label, result.best_scores, memory_figures),
        "",
        *_category_lines(result),
        *_cross_lines(run_dir),
        *_score_notes(result, memory_figures),
        "",
        *_paired_lines(result.seed_user_scores, result.best_user_scores, figure_label(result.seed_scores),
                       memory_figures),
        "",
        *_best_candidate_lines(result),
        "",
        *_spend_lines(result.usage),
    ]
    plots = _evolution_plots(result, history, run_dir / REPORT_DIR, memory_figures)
    lines += ["", "Plots: " + ", ".join(str(path) for path in plots), f"MLflow: {mlflow_ui_command(run_dir)}"]
    return "\n".join(lines) + "\n"
