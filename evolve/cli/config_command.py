"""``memevo config``: a commented starting config, and the JSON Schema of each kind of config file."""

# Annotations are evaluated at import (no ``from __future__ import annotations``), as typer reads them.
import json
from enum import Enum
from typing import Annotated

import typer

from memevo.evolve.cli.config_examples import EXAMPLES
from memevo.evolve.cli.config_reference import json_schema

app = typer.Typer(help="Starting configs and the schema of every config field.", no_args_is_help=True)


class ExampleKind(str, Enum):
    evolve = "evolve"
    ablate = "ablate"
    agent = "agent"
    env = "env"


class SchemaKind(str, Enum):
    evolve = "evolve"
    ablate = "ablate"
    agent = "agent"
    llm = "llm"
    env = "env"
    synth = "synth"
    data = "data"


@app.command()
def example(kind: Annotated[ExampleKind, typer.Argument(help="Which file: evolve, ablate, agent or env.")]) -> None:
    """Print a commented starting config of KIND; it loads as it is. Every field is in experiments/REFERENCE.md."""
    typer.echo(EXAMPLES[kind.value], nl=False)


@app.command()
def schema(kind: Annotated[SchemaKind, typer.Argument(help="Which file's schema.")]) -> None:
    """Print the JSON Schema of KIND's file (data: one item of an AMemGym data.json)."""
    typer.echo(json.dumps(json_schema(kind.value), indent=2, ensure_ascii=False))
