"""``memevo report RUN_DIR``: a finished (or interrupted) evolution or ablation, again, from its stored records.

Reads only files in the run folder (``result.json``, ``generations/*/outcome.json``, ``spend.json``,
``config.json`` for an evolution; ``ablation.json`` and ``*/seed-*/arm_result.json`` for an ablation).
It never builds an LLM client, so it is free and works offline.
"""

from __future__ import annotations

import json
from pathlib import Path

from memevo.agents.errors import UserInputError
from memevo.agents.llm.accounting import UsageReport
from memevo.environments.metrics import Scores, UserScores
from memevo.evolve.ablation import MANIFEST_FILE, load_manifest, render_ablation
from memevo.evolve.ablation_plots import plot_failure_split, plot_period_curves
from memevo.evolve.loop import EvolutionResult, GenerationOutcome
from memevo.evolve.stats import Interval, fmt, fmt_p, paired_test

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


def _history(run_dir: Path) -> list[GenerationOutcome]:
    paths = sorted((run_dir / "generations").glob("gen_*/outcome.json"))
    return [GenerationOutcome.model_validate_json(path.read_text(encoding="utf-8")) for path in paths]


def _history_table(history: list[GenerationOutcome]) -> list[str]:
    lines = [
        "| generation | kept | improved | best train | best val | kept val | candidates | pruned | rejected proposals |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in history:
        lines.append(
            f"| {row.generation} | {row.kept_id[:8]} | {'yes' if row.accepted and row.generation else 'no'} "
            f"| {fmt(max(row.train.values(), default=None))} | {fmt(max(row.val.values(), default=None))} "
            f"| {fmt(row.parent_val)} | {len(row.train)} | {len(row.pruned)} | {row.stats.rejected} |"
        )
    return lines


def _scores_line(label: str, scores: Scores) -> str:
    failure = scores.failure
    split = f", write/read/util {failure.write:.3f}/{failure.read:.3f}/{failure.utilization:.3f}" if failure else ""
    return (
        f"| {label} | {scores.n_users} | {fmt(scores.accuracy)} | {fmt(scores.memory_score)} "
        f"({scores.n_memory_points}/{scores.n_memory_points + scores.n_excluded}) | {fmt(scores.pooled_memory_score)} "
        f"| {fmt(scores.format_error_rate)} | {' '.join(fmt(p.accuracy, 2) for p in scores.per_period)} |{split}"
    )


def _paired_lines(seed: list[UserScores], best: list[UserScores]) -> list[str]:
    lines = []
    for metric, pick in (("accuracy", lambda u: u.accuracy), ("memory score", lambda u: u.memory_score)):
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
    lines = ["| role | calls | cached | prompt tokens | completion tokens | $ |", "|---|---|---|---|---|---|"]
    for role, spent in sorted(usage.by_role.items()):
        lines.append(
            f"| {role} | {spent.calls} | {spent.cache_hits} | {spent.prompt_tokens} | {spent.completion_tokens} "
            f"| {spent.dollars:.4f} |"
        )
    total = usage.total()
    lines.append(
        f"| total | {total.calls} | {total.cache_hits} | {total.prompt_tokens} | {total.completion_tokens} "
        f"| {total.dollars:.4f} |"
    )
    return lines


def _point(value: float | None) -> Interval:
    return Interval(mean=value, low=None, high=None, n=1, method="t")


def _evolution_plots(result: EvolutionResult, out_dir: Path) -> list[Path]:
    curves = {
        label: [_point(p.memory_score if p.memory_score is not None else p.accuracy) for p in scores.per_period]
        for label, scores in (("seed", result.seed_scores), ("best", result.best_scores))
    }
    has_memory = result.best_scores.memory_score is not None
    split = {
        label: (s.failure.write, s.failure.read, s.failure.utilization) if s.failure else (None,) * 3
        for label, s in (("seed", result.seed_scores), ("best", result.best_scores))
    }
    return [
        plot_period_curves(curves, out_dir / "test_periods.png", ylabel="memory score" if has_memory else "accuracy",
                           title="test users: seed vs best per period"),
        plot_failure_split(split, out_dir / "test_failures.png", title="test users: failure split"),
    ]


def evolution_report(run_dir: Path) -> str:
    """History, seed vs best on the test users (with a paired test), spend; writes plots to ``report/``."""
    config = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
    history = _history(run_dir)
    lines = [f"# Evolution: {config.get('name', run_dir.name)} ({config.get('protocol', 'outer_loop')})", ""]
    if history:
        lines += _history_table(history) + [""]
    result_path = run_dir / "result.json"
    if not result_path.exists():
        lines.append(f"Unfinished: no result.json yet. Continue it with `memevo evolve CONFIG --run-dir {run_dir} --resume`.")
        spend_path = run_dir / "spend.json"
        if spend_path.exists():
            lines += ["", *_spend_lines(UsageReport.model_validate_json(spend_path.read_text(encoding="utf-8")))]
        return "\n".join(lines) + "\n"
    result = EvolutionResult.model_validate_json(result_path.read_text(encoding="utf-8"))
    best_label = "evolving (per user)" if result.protocol == "amemgym_period" else f"best {result.best.id[:8]}"
    lines += [
        f"Stopped: {result.stop_reason}",
        "",
        "| candidate | test users | accuracy | memory score (AMemGym; cells used/all) | pooled memory score "
        "| format errors | accuracy per period |",
        "|---|---|---|---|---|---|---|",
        _scores_line(f"seed {result.seed.id[:8]}", result.seed_scores),
        _scores_line(best_label, result.best_scores),
        "",
        *_paired_lines(result.seed_user_scores, result.best_user_scores),
        "",
        *_spend_lines(result.usage),
    ]
    changed = sorted(name for name, text in result.best.policy.prompts.items() if result.seed.policy.prompts.get(name) != text)
    if changed:
        lines += ["", f"Evolved components: {', '.join(changed)} (see best_policy.json in MLflow)"]
    plots = _evolution_plots(result, run_dir / REPORT_DIR)
    lines += ["", "Plots: " + ", ".join(str(path) for path in plots), f"MLflow: {mlflow_ui_command(run_dir)}"]
    return "\n".join(lines) + "\n"
