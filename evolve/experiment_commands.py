"""The ``memevo ablate`` and ``memevo report`` commands."""

# Annotations are evaluated at import (no ``from __future__ import annotations``): typer builds the options from
# them at every start, and evaluating a command's string annotations (twice, in typer) cost ~20 ms for eval.
from pathlib import Path
from typing import Annotated

import typer

from memevo.agents.llm.config import CONCURRENCY_HELP
from memevo.environments.resume import resumable
from memevo.environments.rundir import claim_run_folder
from memevo.evolve.progress import show_progress


def ablate_command(
    ctx: typer.Context,
    config: Annotated[Path, typer.Argument(help="Ablation YAML (arms x seeds), e.g. experiments/feedback-ablation.yaml.")],
    run_dir: Annotated[Path | None, typer.Option("--run-dir", help="Output folder; default runs/<ablation name>.")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue an interrupted ablation in --run-dir.")] = False,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the LLM response cache.")] = False,
    concurrency: Annotated[int | None, typer.Option("--concurrency", min=1, help=CONCURRENCY_HELP)] = None,
) -> None:
    """Run every arm over every seed on the same users; print per-arm intervals and paired tests."""
    from memevo.agents.llm.hub import LLMHub  # heavy imports only when the command runs
    from memevo.evolve.ablation import run_ablation
    from memevo.evolve.ablation_config import load_ablation_config
    from memevo.evolve.report import mlflow_ui_command

    ablation = load_ablation_config(config)
    folder = run_dir or Path("runs") / ablation.name
    show_progress()
    with (claim_run_folder(folder, flag="--run-dir", kind="ablation"), resumable(ctx),
          LLMHub(use_cache=not no_cache, concurrency=concurrency) as hub):
        outcome = run_ablation(ablation, run_dir=folder, hub=hub, resume=resume, progress=typer.echo)
    typer.echo(outcome.outputs["markdown"].read_text(encoding="utf-8"))
    typer.echo(f"Tables and plots: {folder}")
    typer.echo(f"MLflow: {mlflow_ui_command(folder)}")


def report_command(
    run_dir: Annotated[Path, typer.Argument(help="A finished (or interrupted) evolution or ablation folder.")],
) -> None:
    """Print a run again from its stored records and write its plots (no LLM calls)."""
    from memevo.evolve.report import report_run

    typer.echo(report_run(run_dir))
