"""``memevo env``: validate, inspect and synthesise AMemGym-compatible data; validate and inspect the benchmarks' files.

Errors in files or flags raise ``UserInputError``; the ``memevo`` entry point turns them into exit code 2.
"""

# Annotations are evaluated at import (no ``from __future__ import annotations``): typer builds the options from
# them at every start, and evaluating a command's string annotations (twice, in typer) cost ~20 ms for eval.
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic import ValidationError

from memevo.core.errors import RunFailedError, UserInputError
from memevo.environments.amemgym.data.io import DEFAULT_SPLIT, format_validation_error, load_items, save_items
from memevo.environments.amemgym.data.validate import validate_items
from memevo.environments.amemgym.generation.command import generate_command
from memevo.environments.amemgym.stats import DatasetStats, compute_stats
from memevo.environments.amemgym.synth import SynthConfig, synthesize
from memevo.environments.formats import read_as
from memevo.environments.item_checks import item_problems
from memevo.environments.registry import (
    DEFAULT_ENVIRONMENT,
    NAMES_HELP,
    OPTION_HELP,
    capabilities_of,
    check_options,
    make_environment,
    parse_options,
)

if TYPE_CHECKING:
    from memevo.environments.benchmarks.stats import BenchmarkStats
    from memevo.environments.protocol import Environment

app = typer.Typer(help="Validate, inspect and generate environments.", no_args_is_help=True,
                  pretty_exceptions_enable=False)

Source = Annotated[str, typer.Argument(help="data.json, a dataset dir/parquet/arrow/json file, or a hub id.")]
Split = Annotated[str, typer.Option(help="Dataset split (hub ids and saved DatasetDicts).")]
RoundsInit = Annotated[int, typer.Option(min=1, help="Rounds per session in period 0.")]
RoundsUpdate = Annotated[int, typer.Option(min=1, help="Rounds per session in later periods.")]
EnvironmentName = Annotated[str, typer.Option(
    "--environment", "-e", help=f"The environment, {NAMES_HELP}: AMemGym-format users, or a benchmark whose "
    "downloaded files PATH names.")]
EnvOption = Annotated[list[str] | None, typer.Option("--env-option", metavar="NAME=VALUE", help=OPTION_HELP)]
DialogField = Annotated[str | None, typer.Option(
    "--dialog-field", help="memorybench: the field whose training dialogs are replayed (default: dialog; LoCoMo and "
    "DialSim datasets have only per-baseline ones: dialog_mem0, dialog_a_mem, ...).")]


@app.command()
def validate(
    path: Source,
    split: Split = DEFAULT_SPLIT,
    min_state_variants: Annotated[int, typer.Option(min=1, help="Fewer choices than this is a warning.")] = 4,
    environment: EnvironmentName = DEFAULT_ENVIRONMENT,
    dialog_field: DialogField = None,
    env_option: EnvOption = None,
) -> None:
    """Check every item against its format's rules (AMemGym's invariants and that every id can name a run folder;
    a benchmark's records and fields); exit 0 when valid, 2 when any error is found."""
    if _replayed(environment):
        _validate_benchmark(_benchmark(environment, _own_options(environment, dialog_field, env_option)), path)
        return
    _own_options(environment, dialog_field, env_option)
    with read_as(environment, path):
        items = load_items(path, split=split)
    violations = validate_items(items, min_state_variants=min_state_variants)
    for violation in violations:
        typer.echo(violation.describe())
    errors = sum(v.severity == "error" for v in violations)
    typer.echo(f"{path}: {len(items)} items: {errors} errors, {len(violations) - errors} warnings")
    if errors:
        raise typer.Exit(2)


@app.command()
def stats(
    path: Source,
    split: Split = DEFAULT_SPLIT,
    rounds_init: RoundsInit = 1,
    rounds_update: RoundsUpdate = 2,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    environment: EnvironmentName = DEFAULT_ENVIRONMENT,
    dialog_field: DialogField = None,
    env_option: EnvOption = None,
) -> None:
    """Users, periods, sessions, rounds, questions, choices, random baseline and transcript size (AMemGym); items,
    sessions, exchanges, questions per category and transcript size (benchmarks; their load warnings on stderr)."""
    if _replayed(environment):
        from memevo.environments.benchmarks.stats import benchmark_stats

        reader = _benchmark(environment, _own_options(environment, dialog_field, env_option))
        with read_as(environment, path):
            items = reader.prepared(reader.load_items(path), source=path)
        figures_of = benchmark_stats(environment, Path(path), items)
        for warning in getattr(reader, "load_warnings", []):
            typer.echo(f"warning: {warning}", err=True)
        typer.echo(figures_of.model_dump_json(indent=2) if as_json else _benchmark_table(figures_of))
        return
    _own_options(environment, dialog_field, env_option)
    with read_as(environment, path):
        items = load_items(path, split=split)
    figures = compute_stats(items, rounds_init=rounds_init, rounds_update=rounds_update)
    typer.echo(figures.model_dump_json(indent=2) if as_json else _table(figures))


@app.command()
def synth(
    out: Annotated[Path, typer.Option(help="Where to write data.json.")],
    users: Annotated[int, typer.Option(help="Simulated users.")] = 2,
    periods: Annotated[int, typer.Option(help="Update periods after period 0.")] = 10,
    questions: Annotated[int, typer.Option(help="Questions per user.")] = 10,
    seed: Annotated[int, typer.Option(help="Seed of every random choice.")] = 0,
    states_per_question: Annotated[int, typer.Option(help="Variables each question needs.")] = 2,
    choices_per_state: Annotated[int, typer.Option(help="Values per variable.")] = 3,
    changes_per_period: Annotated[int, typer.Option(help="Target changes per update period (+-1).")] = 4,
    sessions_init: Annotated[int | None, typer.Option(help="Sessions in period 0 (default: variables/2).")] = None,
    min_state_variants: Annotated[int, typer.Option(help="Minimum answer choices per question.")] = 4,
    start_date: Annotated[str, typer.Option(help="Simulation start, YYYY-MM-DD.")] = "2020-10-01",
    months_per_period: Annotated[int, typer.Option(help="Simulated months between periods.")] = 3,
    filler_sentences: Annotated[int, typer.Option(help="Small-talk sentences per query (length knob).")] = 0,
    vocabulary: Annotated[Path | None, typer.Option(help="Custom vocabulary JSON.")] = None,
    rounds_init: RoundsInit = 1,
    rounds_update: RoundsUpdate = 2,
) -> None:
    """Write procedural AMemGym-compatible data (no LLM; same arguments give a byte-identical file).

    Rounds are an evaluation setting, not stored in the data; here they only size the printed estimate.
    """
    try:
        config = SynthConfig(users=users, periods=periods, questions=questions, seed=seed,
                             states_per_question=states_per_question, choices_per_state=choices_per_state,
                             changes_per_period=changes_per_period, sessions_init=sessions_init,
                             min_state_variants=min_state_variants, start_date=start_date,
                             months_per_period=months_per_period, filler_sentences=filler_sentences,
                             vocabulary=vocabulary)
    except ValidationError as error:
        field, message = format_validation_error(error)
        raise UserInputError(message, field=field) from error
    items = synthesize(config)
    errors = [v for v in validate_items(items, min_state_variants=min_state_variants) if v.severity == "error"]
    if errors:
        raise RunFailedError("generated data failed validation: " + "; ".join(v.describe() for v in errors[:3]))
    save_items(items, out)
    typer.echo(f"wrote {len(items)} users to {out}")
    typer.echo(_table(compute_stats(items, rounds_init=rounds_init, rounds_update=rounds_update)))


def _replayed(name: str) -> bool:
    """Whether ``name``'s items are replayed benchmark files (checked and counted by the environment) rather than
    simulated users, whose AMemGym data model (states, periods, questions) the checks and figures here read."""
    return capabilities_of(name, field="--environment").sessions == "off_policy"


def _own_options(name: str, dialog_field: str | None, words: list[str] | None) -> dict[str, str]:
    """The environment's own settings (``--env-option``, ``--dialog-field``); one it does not take is refused,
    naming the environments that do."""
    options = parse_options(words or [], field="--env-option")
    if dialog_field is not None:
        options["dialog_field"] = dialog_field
    check_options(name, options)
    return options


def _benchmark(name: str, options: dict[str, str]) -> "Environment[Any]":
    from memevo.environments.runner import EpisodeConfig

    return make_environment(name, EpisodeConfig(), field="--environment", options=options)


def _validate_benchmark(environment: "Environment[Any]", path: str) -> None:
    """A benchmark's files read in full: the first bad record stops it with its file and field (exit 2); then every
    problem ``memevo eval`` would refuse the items for (``item_checks``) is listed, and any exits 2."""
    with read_as(environment.name, path):
        items = environment.load_items(path)
    warnings: list[str] = getattr(environment, "load_warnings", [])
    for warning in warnings:
        typer.echo(f"warning: {warning}")
    problems = item_problems(items, id_field=getattr(environment, "id_field", "id"))
    for problem in problems:
        typer.echo(f"error: {problem.describe(path)}")
    questions = sum(len(item.questions) for item in items)
    typer.echo(f"{path}: {len(items)} {environment.name} items, {questions} questions: {len(problems)} errors, "
               f"{len(warnings)} warnings")
    if problems:
        raise typer.Exit(2)


def _benchmark_table(figures: "BenchmarkStats") -> str:
    rows: dict[str, Any] = figures.model_dump()
    nested = {key: rows.pop(key) for key in ("items_per_split", "questions_per_category", "questions_per_scoring")}
    lines = [f"{key.ljust(20)}  {value if isinstance(value, str) else _number(value)}" for key, value in rows.items()]
    for key, counts in nested.items():
        lines.append(f"{key}:")
        lines += [f"  {name.ljust(18)}  {_number(count)}" for name, count in counts.items()]
    return "\n".join(lines)


def _table(figures: DatasetStats) -> str:
    rows = json.loads(figures.model_dump_json())
    width = max(len(key) for key in rows)
    return "\n".join(f"{key.ljust(width)}  {_number(value)}" for key, value in rows.items())


def _number(value: float | int) -> str:
    if isinstance(value, float) and abs(value) < 100:
        return f"{value:.3f}"
    return f"{value:,.0f}"


app.command("generate")(generate_command)
