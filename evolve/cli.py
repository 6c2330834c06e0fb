"""The ``memevo`` command line: composes each layer's commands and maps errors to exit codes.

Exit codes: 0 success; 2 bad usage, config, data or flag (one message naming the file and field, no
traceback); 1 a run that started but failed; 130 and 143 a run stopped by SIGINT and SIGTERM (both print the
command that resumes it, as does a failure a resume fixes: ``environments.resume``).
"""

from __future__ import annotations

import atexit
import ctypes
import gc
import importlib
import os
import sys
import types
from typing import NoReturn

import typer
from typer.core import TyperGroup

from memevo.agents.errors import Interrupted, MemevoError, UserInputError

COMMANDS: dict[str, tuple[str, str, str | None]] = {
    # name: (module, attribute, help of a group; a command's help is its docstring), in the order help lists them
    "eval": ("memevo.environments.eval_cli", "eval_command", None),
    "evolve": ("memevo.evolve.commands", "evolve_command", None),
    "ui": ("memevo.evolve.commands", "ui_command", None),
    "ablate": ("memevo.evolve.experiment_commands", "ablate_command", None),
    "report": ("memevo.evolve.experiment_commands", "report_command", None),
    "llm": ("memevo.agents.llm.cli", "app", "Serve and check the LLM endpoint."),
    "env": ("memevo.environments.cli", "app", "Validate, inspect and generate environments."),
}


def load_command(name: str) -> typer.core.click.Command:
    """The click command of ``name``, its module imported now."""
    module, attribute, group_help = COMMANDS[name]
    target = getattr(importlib.import_module(module), attribute)
    if isinstance(target, typer.Typer):
        command = typer.main.get_group(target)  # the completion options belong to the root only
        command.help = group_help
    else:
        single = typer.Typer(add_completion=False)
        single.command(name)(target)
        command = typer.main.get_command(single)
    command.name = name
    return command


class LazyCommands(TyperGroup):
    """The root group: a command's module is imported only when that command runs or a help page lists it, so
    ``memevo eval`` does not import evolve, MLflow's helpers, the embedded server or the synthesiser."""

    def list_commands(self, ctx: typer.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: typer.Context, cmd_name: str) -> typer.core.click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            self.commands[cmd_name] = load_command(cmd_name)
        return super().get_command(ctx, cmd_name)


app = typer.Typer(
    name="memevo",
    cls=LazyCommands,
    help="Evolve the prompts and tune the settings of LLM memory agents on AMemGym-compatible worlds.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """A root without commands of its own: they are added by ``LazyCommands`` when asked for."""


def _return_large_frees_to_the_os() -> None:
    """Keep glibc's mmap threshold at its default instead of letting it grow.

    After the first large free glibc raises the threshold, so later megabyte-sized prompt strings (a
    native agent's history) come from the heap and fragment it: measured on the AMemGym-sized native run,
    peak RSS 711 MB with the growing threshold, 409 MB with it pinned. Not glibc: nothing to do.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    m_mmap_threshold = -3
    libc.mallopt(m_mmap_threshold, 128 * 1024)


def _import_command(args: list[str]) -> None:
    """Import the module of the command about to run (every command's when none is named: help lists them all)
    with the cyclic garbage collector off, then freeze what start-up made. Modules, classes and validators live
    as long as the process: collecting while they are made cost ~0.1 s of start-up, and every later full
    collection, the ones at exit included (~0.2 s), would walk them all again."""
    named = args[0] if args and args[0] in COMMANDS else None
    modules = dict.fromkeys(module for name, (module, _, _) in COMMANDS.items() if named in (None, name))
    gc.disable()
    try:
        for module in modules:
            importlib.import_module(module)
    finally:
        gc.freeze()
        gc.enable()


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


PLUGINS_OFF = ("__all__", "1", "true")
"""The values of ``$PYDANTIC_DISABLE_PLUGINS`` for which pydantic loads no plugin at all."""
PLUGIN_LOADER = "pydantic.plugin._loader"


def _skip_pydantic_plugin_search() -> None:
    """memevo uses no pydantic plugin, but pydantic searches every installed distribution's entry points for one
    when the first model is built: ~20 ms of CPU at each start in memevo's environment (measured), paid again by
    the plot process, which inherits this setting. An explicit ``$PYDANTIC_DISABLE_PLUGINS`` (empty: load them
    all) is left as it is.

    With every plugin off, pydantic still imports its plugin loader at the first model build, and the loader
    imports ``importlib.metadata`` (with ``email``, ``zipfile``, ...) only to find none: ~15 ms more before an eval's
    first request. A stand-in loader that finds none takes its place (``tests/test_startup.py`` holds it to
    pydantic's own: same name, no plugins)."""
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    if os.environ["PYDANTIC_DISABLE_PLUGINS"] in PLUGINS_OFF and PLUGIN_LOADER not in sys.modules:
        loader = types.ModuleType(PLUGIN_LOADER, "memevo's stand-in for pydantic's plugin loader: every plugin is off")
        loader.get_plugins = tuple  # type: ignore[attr-defined]  # what pydantic's returns then: no plugin
        sys.modules[PLUGIN_LOADER] = loader


def main() -> None:
    """Entry point of the console script."""
    _return_large_frees_to_the_os()
    _skip_pydantic_plugin_search()
    _import_command(sys.argv[1:2])
    try:
        app()  # standalone mode: typer itself exits 2 on bad usage and raises SystemExit at the end
    except SystemExit as done:
        if done.code in (None, 0) and sys.argv[1:2] and sys.argv[1] in ENDS_AT_ONCE:
            _end_at_once()
        raise
    except UserInputError as error:
        print(f"memevo: error: {error}", file=sys.stderr)
        sys.exit(2)
    except Interrupted as stopped:  # SIGINT or SIGTERM during a run: how to resume it
        print(f"memevo: {stopped}", file=sys.stderr)
        sys.exit(stopped.exit_code)
    except MemevoError as error:  # RunFailedError, LLMError after its retries, ...
        print(f"memevo: run failed: {error}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
