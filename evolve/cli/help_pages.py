"""What ``memevo … --help`` shows besides the options: each command's line in its parent's list and one example.

Help is click's plain layout, not typer's rich panels: in an 80-column terminal the panels cut option names
(``--no-memory-bas…``), squeezed help text into a narrow column and showed flags as ``<bool>``; the plain
layout gives every option its full name and wraps its text in the rest of the line.
"""

from __future__ import annotations

from typing import NamedTuple

from typer.core import TyperCommand, TyperGroup

MAX_HELP_WIDTH = 100
"""Help uses the terminal's width up to this many columns (click's default stops at 80)."""


class HelpPage(NamedTuple):
    summary: str
    """The line the parent's command list shows (the docstring's first sentence is often cut there)."""
    example: str
    """One command line a reader can copy."""


ROOT_EXAMPLE = "memevo evolve experiments/quickstart.yaml"

PAGES: dict[str, HelpPage] = {
    "eval": HelpPage("Score an agent policy on an environment (records, plot).",
                     "memevo eval --agent agent.yaml --env data.json --out runs/eval --upper-bound"),
    "evolve": HelpPage("Evolve an agent's prompts and settings from a config.",
                       "memevo evolve experiments/quickstart.yaml --resume"),
    "ui": HelpPage("Open the MLflow UI on an evolution's or ablation's store.",
                   "memevo ui --run-dir runs/quickstart"),
    "ablate": HelpPage("Run every arm over every seed; paired tests per arm.",
                       "memevo ablate experiments/feedback-ablation.yaml"),
    "report": HelpPage("Print a run again from its records (no LLM calls).",
                       "memevo report runs/quickstart"),
    "compare": HelpPage("Two finished evolutions side by side (no LLM calls).",
                        "memevo compare runs/a runs/b"),
    "config": HelpPage("Print a commented starting config or a config's JSON Schema.",
                       "memevo config example evolve > my-evolution.yaml"),
    "config example": HelpPage("Print a commented starting config that loads as it is.",
                               "memevo config example agent > agent.yaml"),
    "config schema": HelpPage("Print the JSON Schema of a kind of config file.",
                              "memevo config schema evolve > evolve.schema.json"),
    "llm": HelpPage("Serve the embedded model and check LLM endpoints.",
                    "memevo llm check --base-url http://localhost:8080/v1"),
    "llm serve": HelpPage("Serve the embedded model on 127.0.0.1 until Ctrl-C.",
                          "memevo llm serve --port 8080"),
    "llm check": HelpPage("Send one chat and one JSON request to an endpoint.",
                          "memevo llm check --base-url http://localhost:8080/v1 --model my-model"),
    "env": HelpPage("Validate, inspect and generate environments.",
                    "memevo env synth --users 2 --out data.json"),
    "env validate": HelpPage("Check data against AMemGym's invariants (exit 2 on errors).",
                             "memevo env validate data.json"),
    "env stats": HelpPage("Sizes, random baseline and transcript tokens of a dataset.",
                          "memevo env stats AGI-Eval/AMemGym"),
    "env synth": HelpPage("Write procedural AMemGym-format data (no LLM).",
                          "memevo env synth --users 4 --periods 3 --questions 5 --out data.json"),
    "env generate": HelpPage("Generate AMemGym-format data with an LLM.",
                             "memevo env generate --users 2 --out generated"),
}


def make_readable(command: TyperCommand | TyperGroup, path: str) -> None:
    """Give ``command`` (named ``path`` under ``memevo``) and its subcommands the plain layout, their summary
    and their example."""
    page = PAGES[path]
    command.rich_markup_mode = None  # typer's commands read it to choose a layout
    command.short_help = page.summary
    command.epilog = example_epilog(page.example)
    if isinstance(command, TyperGroup):
        command.help = command.help or page.summary
        for name, subcommand in command.commands.items():
            if isinstance(subcommand, TyperCommand | TyperGroup):
                make_readable(subcommand, f"{path} {name}")


def example_epilog(example: str) -> str:
    """The closing lines of a help page; ``\\b`` keeps click from re-wrapping the command line."""
    return f"\b\nExample:\n  {example}"
