"""The ``memevo ablate`` and ``memevo report`` commands."""

# Annotations are evaluated at import (no ``from __future__ import annotations``): typer builds the options from
# them at every start, and evaluating a command's string annotations (twice, in typer) cost ~20 ms for eval.
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from memevo.agents.llm.config import CONCURRENCY_HELP
from memevo.core.errors import UserInputError
from memevo.environments.resume import resumable
from memevo.environments.rundir import claim_run_folder
from memevo.evolve.presentation.progress import show_progress

if TYPE_CHECKING:
    from memevo.evolve.ablation.config import AblationConfig


def ablate_command(
    ctx: typer.Context,
    config: Annotated[Path, typer.Argument(help="Ablation YAML (arms x seeds), e.g. experiments/feedback-ablation.yaml.")],
    run_dir: Annotated[Path | None, typer.Option("--run-dir", help="Output folder; default runs/<ablation name>.")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue an interrupted ablation in --run-dir.")] = False,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the LLM response cache.")] = False,
    concurrency: Annotated[int | None, typer.Option("--concurrency", min=1, help=CONCURRENCY_HELP)] = None,
    workers: Annotated[int, typer.Option("--workers", min=1, help="Worker processes to run on this machine; they "
                                         "share the run folder and claim (arm, seed) evolutions.")] = 1,
    store: Annotated[str | None, typer.Option("--store", help="Database URL where workers claim their work (e.g. "
                                              "postgresql+psycopg://host/memevo): start workers on other machines "
                                              "with the same URL and --run-dir. Default with --workers: an SQLite "
                                              "file in the run folder.")] = None,
) -> None:
    """Run every arm over every seed on the same users; print per-arm intervals and paired tests."""
    from memevo.agents.llm.hub import LLMHub  # heavy imports only when the command runs
    from memevo.evolve.ablation.config import load_ablation_config
    from memevo.evolve.ablation.run import ablation_tracker, run_ablation
    from memevo.evolve.presentation.report import mlflow_ui_command

    ablation = load_ablation_config(config)
    folder = run_dir or Path("runs") / ablation.name
    check_ablation_stores(ablation, folder)
    show_progress()
    if workers > 1 or store:
        _ablate_as_worker(ctx, ablation, config, folder, workers, store, no_cache, concurrency)
        return
    with (claim_run_folder(folder, field="run_dir", kind="ablation"), resumable(ctx),
          LLMHub(use_cache=not no_cache, concurrency=concurrency) as hub):
        _, tracker = ablation_tracker(ablation)
        tracker.open_store(ablation.tracking_uri or tracker.ui().default_store(folder))  # a new store: created once
        outcome = run_ablation(ablation, run_dir=folder, hub=hub, resume=resume, progress=typer.echo)
    typer.echo(outcome.outputs["markdown"].read_text(encoding="utf-8"))
    typer.echo(f"Tables and plots: {folder}")
    typer.echo(f"MLflow: {mlflow_ui_command(folder)}")


def _ablate_as_worker(ctx: typer.Context, ablation: "AblationConfig", config: Path, folder: Path, workers: int,
                      store: str | None, no_cache: bool, concurrency: int | None) -> None:
    """One worker on the shared claim store, and ``workers - 1`` more started beside it."""
    from memevo.agents.llm.hub import LLMHub
    from memevo.evolve.ablation.run import ablation_tracker, render_ablation
    from memevo.evolve.databases import check_database_url
    from memevo.evolve.presentation.report import mlflow_ui_command
    from memevo.evolve.workers.ablation_worker import WorkerSettings, run_ablation_worker
    from memevo.evolve.workers.launch import sibling_workers, worker_store

    url = worker_store(store, folder)
    check_database_url(url, source="command line", field="--store")
    extra = [*(["--no-cache"] if no_cache else []), *([f"--concurrency={concurrency}"] if concurrency else [])]
    with (sibling_workers(workers - 1, config, folder, url, extra), resumable(ctx),
          LLMHub(use_cache=not no_cache, concurrency=concurrency) as hub):
        _, tracker = ablation_tracker(ablation)
        tracker.open_store(ablation.tracking_uri or tracker.ui().default_store(folder))
        outcome = run_ablation_worker(ablation, run_dir=folder, hub=hub, settings=WorkerSettings(store=url),
                                      progress=typer.echo)
    if outcome is None and workers > 1:  # a sibling wrote the summary; all of them have finished
        outcome = render_ablation(folder)
    if outcome is None:
        typer.echo(f"Another worker writes the summary: memevo report {folder}")
        return
    typer.echo(outcome.outputs["markdown"].read_text(encoding="utf-8"))
    typer.echo(f"Tables and plots: {folder}")
    typer.echo(f"MLflow: {mlflow_ui_command(folder)}")


def check_ablation_stores(ablation: "AblationConfig", folder: Path) -> None:
    """The ablation's name (its default folder and its tracker's experiment), its tracker's store, and every
    arm's stores, before ``folder`` is claimed (``Tracker.check_store``)."""
    from memevo.evolve.ablation.config import resolve_all
    from memevo.evolve.ablation.run import ablation_tracker
    from memevo.evolve.databases import check_name
    from memevo.evolve.runtime import check_stores

    source = str(ablation.source or "ablation config")
    check_name(ablation.name, source=source)
    _, tracker = ablation_tracker(ablation)
    tracker.check_store(ablation.tracking_uri, ablation.name, folder, source=source, store_field="tracking_uri",
                        experiment_field="name")
    for (arm, seed), evolve_config in resolve_all(ablation).items():
        try:  # every arm logs to the ablation's store and experiment, checked above
            check_stores(evolve_config.model_copy(update={"tracking": evolve_config.tracking.model_copy(
                update={"enabled": False})}), folder)
        except UserInputError as error:
            raise UserInputError(f"arm '{arm}' (seed {seed}): {error.message}", source=error.source,
                                 field=error.field) from None


def report_command(
    run_dir: Annotated[Path, typer.Argument(help="A finished (or interrupted) evolution or ablation folder.")],
    output_format: Annotated[str, typer.Option("--format", help="text (with plots); json or csv: a finished evolution's "
                                        "outcome as data (csv: one line per candidate).")] = "text",
) -> None:
    """Print a run again from its stored records and write its plots (no LLM calls)."""
    from memevo.evolve.presentation import report_formats
    from memevo.evolve.presentation.report import report_run

    renderers = {"text": report_run, "json": report_formats.report_json, "csv": report_formats.report_csv}
    if output_format not in renderers:
        raise UserInputError(f"is '{output_format}'; use text, json or csv", field="--format")
    typer.echo(renderers[output_format](run_dir))
