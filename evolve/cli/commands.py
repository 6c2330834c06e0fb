"""``memevo evolve`` and ``memevo ui``: run an evolution, then look at it in the tracker's UI (MLflow's)."""

# Annotations are evaluated at import (no ``from __future__ import annotations``): typer builds the options from
# them at every start, and evaluating a command's string annotations (twice, in typer) cost ~20 ms for eval.
import json
import shlex
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from memevo.agents.llm.config import CONCURRENCY_HELP
from memevo.core.errors import RunFailedError, UserInputError
from memevo.environments.resume import resumable
from memevo.environments.rundir import claim_run_folder
from memevo.evolve.config import DEFAULT_TRACKER, load_evolve_config
from memevo.evolve.presentation.explain import spend_line
from memevo.evolve.presentation.progress import show_progress

if TYPE_CHECKING:
    from memevo.evolve.observers.tracker_ui import TrackerUI


def _default_run_dir(config_path: Path) -> Path:
    return Path("runs") / config_path.stem


def evolve_command(
    ctx: typer.Context,
    config: Annotated[Path, typer.Argument(help="Evolution config (YAML).")],
    run_dir: Annotated[Path | None, typer.Option(help="Run folder; default runs/<config name>.")] = None,
    resume: Annotated[bool, typer.Option(
        help="Continue the run in the run folder (a folder without a run starts one, so this is safe to always pass)."
    )] = False,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the LLM response cache.")] = False,
    concurrency: Annotated[int | None, typer.Option("--concurrency", min=1, help=CONCURRENCY_HELP)] = None,
    workers: Annotated[int, typer.Option("--workers", min=1, help="Worker processes to run on this machine; they "
                                         "share the run folder and the Optuna study and claim a generation's "
                                         "candidates (strategy.acceptance mean or paired, candidates at once).")] = 1,
    store: Annotated[str | None, typer.Option("--store", help="Database URL where workers claim their work and "
                                              "share the Optuna study (e.g. postgresql+psycopg://host/memevo): start "
                                              "workers on other machines with the same URL and --run-dir. Default "
                                              "with --workers: an SQLite file in the run folder.")] = None,
) -> None:
    """Evolve a memory agent's prompts and settings; prints seed vs best on the test users."""
    from memevo.agents.llm.hub import LLMHub
    from memevo.evolve.cross_test import cross_test_lines, read_cross_test
    from memevo.evolve.loop import run_evolution

    show_progress()
    settings = load_evolve_config(config)
    folder = run_dir or _default_run_dir(config)
    if workers > 1 or store:
        from memevo.evolve.cli.evolve_workers import evolve_with_workers

        result = evolve_with_workers(ctx, settings, config, folder, workers=workers, store=store, resume=resume,
                                     no_cache=no_cache, concurrency=concurrency)
    else:
        with (claim_run_folder(folder, field="run_dir", kind="evolution"), resumable(ctx),
              LLMHub(use_cache=not no_cache, concurrency=concurrency) as hub):
            result = run_evolution(settings, run_dir=folder, hub=hub, resume=resume)
    from memevo.evolve.presentation.headline import held_out_lines, objective_label  # scipy.stats: after the run

    typer.echo(f"run folder: {folder} (environment {settings.environment})")
    typer.echo(f"stopped: {result.stop_reason}")
    typer.echo(f"objective: {objective_label(result.objective, result.seed_scores)} (selection, acceptance, tuning and pruning used it); "
               f"seed {result.seed.id[:8]}, best {result.best.id[:8]}")
    if result.protocol == "outer_loop" and result.best.id == result.seed.id:
        typer.echo("no candidate beat the seed on the validation users: the best is the seed, so the test lines "
                   "below compare it with itself")
    for line in held_out_lines(result.objective, result.seed_scores, result.best_scores, result.seed_user_scores,
                               result.best_user_scores, best_label=_best_label(result.protocol),
                               environment=result.environment):
        typer.echo(line)
    cross = read_cross_test(folder)
    for line in [] if cross is None else cross_test_lines(cross):
        typer.echo(line)
    typer.echo(f"spend: {spend_line(result.usage.total())}")
    typer.echo(f"report (hyperparameters, prompt, diff): memevo report {shlex.quote(str(folder))}")
    if settings.tracking.enabled:
        from memevo.evolve.plugins import make_tracker

        typer.echo(f"{make_tracker(settings.tracking.tracker).ui().name} UI: memevo ui --run-dir {shlex.quote(str(folder))}")


def _best_label(protocol: str) -> str:
    return "evolving" if protocol == "amemgym_period" else "best"


def _store(run_dir: Path | None, tracking_uri: str | None) -> tuple["TrackerUI", str, str | None]:
    """The tracker's UI, store and experiment name of an evolution folder (``config.json``, its
    ``tracking.tracker``) or an ablation folder (``ablation.json``, the default tracker's); a bare ``--tracking-uri``
    is the default tracker's and names no experiment."""
    from memevo.evolve.plugins import make_tracker

    if tracking_uri:
        return make_tracker().ui(), tracking_uri, None
    if run_dir is None:
        raise UserInputError("give --run-dir or --tracking-uri", field="--run-dir")
    from memevo.evolve.ablation.manifest import load_manifest

    manifest = load_manifest(run_dir)
    if manifest is not None:
        return make_tracker().ui(), manifest.tracking_uri, manifest.name
    ids = run_dir / "config.json"
    if not ids.exists():
        raise UserInputError("no evolution (config.json) or ablation (ablation.json) in this folder",
                             source=str(run_dir), field="--run-dir")
    config = json.loads(ids.read_text(encoding="utf-8"))
    tracking = config.get("tracking", {})
    ui = make_tracker(tracking.get("tracker", DEFAULT_TRACKER), source=str(ids)).ui()
    return ui, tracking.get("uri") or ui.default_store(run_dir), tracking.get("experiment") or config.get("name")


def _check_port_free(port: int) -> None:
    """Fail before starting anything when another server holds the port (the UI would exit 0 otherwise)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: TIME_WAIT is no obstacle
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as error:
            raise RunFailedError(f"port {port} on 127.0.0.1 is in use ({error.strerror}); pass --port with a free "
                                 "one") from None


def ui_command(
    run_dir: Annotated[Path | None, typer.Option(help="A run folder made by memevo evolve or memevo ablate.")] = None,
    tracking_uri: Annotated[str | None, typer.Option(help="Any MLflow tracking URI instead.")] = None,
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1.")] = 5000,
    workers: Annotated[int, typer.Option(min=1, help="Server worker processes (one is plenty for one person).")] = 1,
) -> None:
    """Open the MLflow UI on the store an evolution or ablation used (exit 1 if it cannot serve)."""
    ui, uri, experiment = _store(run_dir, tracking_uri)
    address = ui.served_at(uri)
    if address is not None:  # e.g. a tracking server (many workers): nothing to start
        typer.echo(f"{ui.name} UI: {address}" + (f" (experiment {experiment!r})" if experiment else ""))
        return
    _check_port_free(port)
    from memevo.evolve.cli.ui_server import serve

    raise typer.Exit(serve(ui, uri, experiment, port=port, workers=workers, echo=typer.echo))


def compare_command(
    run_a: Annotated[Path, typer.Argument(help="A finished evolution folder.")],
    run_b: Annotated[Path, typer.Argument(help="Another finished evolution folder.")],
) -> None:
    """Compare two finished evolutions from their records (no LLM calls): the best prompts' diff, seed and best on
    each run's test users with intervals, and the spend."""
    from memevo.evolve.presentation.compare import compare_runs

    typer.echo(compare_runs(run_a, run_b))
