"""The ``memevo`` command line: composes each layer's commands and maps errors to exit codes.

Exit codes: 0 success; 2 bad usage, config, data or flag (one message naming the file and field, no
traceback); 1 a run that started but failed; 130 and 143 a run stopped by SIGINT and SIGTERM (both print the
command that resumes it, as does a failure a resume fixes: ``environments.resume``).
"""

from __future__ import annotations

import atexit
import gc
import importlib
import os
import sys
import warnings
from typing import NoReturn, cast

import typer
from typer.core import TyperCommand, TyperGroup

from memevo.core.errors import Interrupted, MemevoError, UserInputError
from memevo.evolve.cli.help_pages import MAX_HELP_WIDTH, ROOT_EXAMPLE, example_epilog, make_readable

COMMANDS: dict[str, tuple[str, str]] = {
    # name: (module, attribute), in the order help lists them; summaries and examples are in ``help_pages``
    "eval": ("memevo.environments.eval_cli", "eval_command"),
    "evolve": ("memevo.evolve.cli.commands", "evolve_command"),
    "ui": ("memevo.evolve.cli.commands", "ui_command"),
    "ablate": ("memevo.evolve.cli.experiment_commands", "ablate_command"),
    "report": ("memevo.evolve.cli.experiment_commands", "report_command"),
    "compare": ("memevo.evolve.cli.commands", "compare_command"),
    "config": ("memevo.evolve.cli.config_command", "app"),
    "llm": ("memevo.agents.llm.cli", "app"),
    "env": ("memevo.environments.cli", "app"),
}


def load_command(name: str) -> TyperCommand | TyperGroup:
    """The command of ``name``, its module imported now."""
    module, attribute = COMMANDS[name]
    target = getattr(importlib.import_module(module), attribute)
    command: TyperCommand | TyperGroup
    if isinstance(target, typer.Typer):
        command = typer.main.get_group(target)  # the completion options belong to the root only
    else:
        single = typer.Typer(add_completion=False)
        single.command(name)(target)
        command = cast(TyperCommand, typer.main.get_command(single))  # one command: typer returns it, not a group
    command.name = name
    make_readable(command, name)
    return command


class LazyCommands(TyperGroup):
    """The root group: a command's module is imported only when that command runs or a help page lists it, so
    ``memevo eval`` does not import evolve, MLflow's helpers, the embedded server or the synthesiser."""

    def list_commands(self, ctx: typer.Context) -> list[str]:  # type: ignore[override]  # typer passes its Context
        return list(COMMANDS)

    def get_command(self, ctx: typer.Context,  # type: ignore[override]  # typer passes its Context
                    cmd_name: str) -> TyperCommand | TyperGroup | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            self.commands[cmd_name] = load_command(cmd_name)
        command = super().get_command(ctx, cmd_name)
        return command if isinstance(command, TyperCommand | TyperGroup) else None


app = typer.Typer(
    name="memevo",
    cls=LazyCommands,
    help="Evolve the prompts and tune the settings of LLM memory agents on AMemGym-compatible worlds.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # click's plain layout, also for usage errors: see help_pages
    context_settings={"max_content_width": MAX_HELP_WIDTH},
    epilog=example_epilog(ROOT_EXAMPLE),
)


@app.callback()
def _root() -> None:
    """A root without commands of its own: they are added by ``LazyCommands`` when asked for."""


ENDS_AT_ONCE = ("eval",)
"""Commands that close everything they open (files, caches, child processes), so a finished one can skip the
interpreter's teardown."""


def _end_at_once() -> NoReturn:
    """Exit 0 without tearing the interpreter down: what is left after a finished ``memevo eval`` is freeing
    every module and object one by one, ~60 ms after a run (measured), with its outputs already written and
    closed. Exit callbacks still run and the standard streams are flushed, as in a normal exit."""
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def main() -> None:
    """Entry point of the console script."""
    try:
        app()  # standalone mode: typer itself exits 2 on bad usage and raises SystemExit at the end
    except SystemExit as done:
        if done.code in (None, 0) and sys.argv[1:2] and sys.argv[1] in ENDS_AT_ONCE:
            _end_at_once()
        raise
    except UserInputError as error:
        verdict = (f"memevo: error: {error}", 2)
    except Interrupted as stopped:  # SIGINT or SIGTERM during a run: how to resume it
        verdict = (f"memevo: {stopped}", stopped.exit_code)
    except MemevoError as error:  # RunFailedError, LLMError after its retries, ...
        verdict = (f"memevo: run failed: {error}", 1)
    _exit_with(*verdict)


def _exit_with(line: str, code: int) -> NoReturn:
    """Print the command's one error line and exit with ``code``; the line stays the last one printed.

    The error's tracebacks kept the failed run's frames alive, and with them, at times, an HTTP library's
    connection attempt that the cancellation never started; freed at the interpreter's teardown, it printed a
    "coroutine ... was never awaited" warning after the line. The error is gone once its ``except`` has ended, so
    what it held is collected here first, and that warning is not shown for a run that has already failed.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"coroutine .* was never awaited", category=RuntimeWarning)
        gc.collect()
    print(line, file=sys.stderr)
    sys.exit(code)


if __name__ == "__main__":
    main()
