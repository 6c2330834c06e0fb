"""``memevo evolve`` and ``memevo ui``: run an evolution, then look at it in the MLflow UI."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import typer

from memevo.agents.errors import UserInputError
from memevo.agents.llm.config import CONCURRENCY_HELP
from memevo.evolve.config import load_evolve_config
from memevo.evolve.progress import show_progress


def _default_run_dir(config_path: Path) -> Path:
    return Path("runs") / config_path.stem


def evolve_command(
    config: Annotated[Path, typer.Argument(help="Evolution config (YAML).")],
    run_dir: Annotated[Path | None, typer.Option(help="Run folder; default runs/<config name>.")] = None,
    resume: Annotated[bool, typer.Option(
        help="Continue the run in the run folder (a folder without a run starts one, so this is safe to always pass)."
    )] = False,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the LLM response cache.")] = False,
    concurrency: Annotated[int | None, typer.Option("--concurrency", min=1, help=CONCURRENCY_HELP)] = None,
) -> None:
    """Evolve a memory agent's prompts and settings; prints seed vs best on the test users."""
    from memevo.agents.llm.hub import LLMHub
    from memevo.evolve.loop import run_evolution

    settings = load_evolve_config(config)
    folder = run_dir or _default_run_dir(config)
    show_progress()
    with LLMHub(use_cache=not no_cache, concurrency=concurrency) as hub:
        result = run_evolution(settings, run_dir=folder, hub=hub, resume=resume)
    typer.echo(f"run folder: {folder}")
    typer.echo(f"stopped: {result.stop_reason}")
    for label, scores in (("seed", result.seed_scores), ("best", result.best_scores)):
        memory = f"{scores.memory_score:.3f}" if scores.memory_score is not None else "n/a"
        typer.echo(f"{label}: test accuracy {scores.accuracy:.3f}, memory score {memory} ({scores.n_users} users)")
    total = result.usage.total()
    typer.echo(f"spend: {total.calls} calls ({total.cache_hits} cached), "
               f"{total.prompt_tokens + total.completion_tokens} tokens, ${total.dollars:.4f}")
    if settings.tracking.enabled:
        typer.echo(f"MLflow UI: memevo ui --run-dir {shlex.quote(str(folder))}")


def _tracking_uri(run_dir: Path | None, tracking_uri: str | None) -> str:
    if tracking_uri:
        return tracking_uri
    if run_dir is None:
        raise UserInputError("give --run-dir or --tracking-uri", field="--run-dir")
    ids = run_dir / "config.json"
    if not ids.exists():
        raise UserInputError("no evolution run in this folder", source=str(run_dir), field="--run-dir")
    configured = json.loads(ids.read_text(encoding="utf-8")).get("tracking", {}).get("uri")
    from memevo.evolve.tracking import default_tracking_uri  # mlflow: only for the UI

    return configured or default_tracking_uri(run_dir)


def ui_command(
    run_dir: Annotated[Path | None, typer.Option(help="A run folder made by memevo evolve.")] = None,
    tracking_uri: Annotated[str | None, typer.Option(help="Any MLflow tracking URI instead.")] = None,
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1.")] = 5000,
) -> None:
    """Open the MLflow UI on the store an evolution used."""
    uri = _tracking_uri(run_dir, tracking_uri)
    mlflow_bin = shutil.which("mlflow") or str(Path(sys.executable).with_name("mlflow"))
    typer.echo(f"MLflow UI: http://127.0.0.1:{port}  (store {uri}; Ctrl-C to stop)")
    command = [mlflow_bin, "ui", "--backend-store-uri", uri, "--host", "127.0.0.1", "--port", str(port)]
    try:
        subprocess.run(command, check=False)
    except KeyboardInterrupt:
        pass


def register_evolve_commands(app: typer.Typer) -> None:
    """Add ``evolve`` and ``ui`` to the memevo command line."""
    app.command("evolve")(evolve_command)
    app.command("ui")(ui_command)
