"""What an ablation's parent run tells MLflow: a description that says what the ablation compared and how its runs
nest, with the summary table on top, so the run page reads like the report's first screen.

The ablation's MLflow observer (``memevo.evolve.observers.ablation_mlflow``) writes it: each tag of
``ablation_note(summary, table)`` set on the parent run after the summary, with the arm table the report already
builds. A pure function, like the evolution's payloads.
"""

from __future__ import annotations

from collections.abc import Sequence

from memevo.evolve.ablation.summary import AblationSummary
from memevo.evolve.tracking.payloads import EXPERIMENT_NOTE_TAG, RUNNING_BEST


def ablation_note(summary: AblationSummary, table: Sequence[str]) -> dict[str, str]:
    """The parent run's description: what was compared, on what metric, over which seeds; the arm table (markdown
    rows, as ``ablation_render`` writes them); then how to find each arm's evolution among the nested runs."""
    seeds = sorted({seed for arm in summary.arms for seed in arm.seeds})
    arms = ", ".join(f"**{arm.arm}**" for arm in summary.arms)
    lines = [
        f"memevo ablation **{summary.name}**: arms {arms} against the baseline **{summary.baseline}**, "
        f"{len(seeds)} seed(s) each; metric: {summary.metric} on each seed's held-out test users.",
        "",
        *table,
        "",
        "Under this run, one evolution per (arm, seed) (tags `evolution_run.<arm>.seed-<seed>` name them); each has "
        f"its generations and candidates nested below it, its `{RUNNING_BEST}` chart and its decisions "
        "(tag `memevo.decision`). The full report, with the paired tests, is in this run's artifacts.",
    ]
    return {EXPERIMENT_NOTE_TAG: "\n".join(lines)}
