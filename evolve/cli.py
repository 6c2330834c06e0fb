"""The ``memevo`` command line: composes each layer's commands and maps errors to exit codes.

Exit codes: 0 success; 2 bad usage, config, data or flag (one message naming the file and field, no
traceback); 1 a run that started but failed.
"""

from __future__ import annotations

import ctypes
import sys

import typer

from memevo.agents.errors import MemevoError, UserInputError
from memevo.agents.llm.cli import app as llm_app
from memevo.environments.cli import app as env_app
from memevo.environments.eval_cli import eval_command
from memevo.environments.generation.command import generate_command
from memevo.evolve.commands import register_evolve_commands
from memevo.evolve.experiment_commands import register_experiment_commands

app = typer.Typer(
    name="memevo",
    help="Evolve the prompts and tune the settings of LLM memory agents on AMemGym-compatible worlds.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
env_app.command("generate")(generate_command)
app.add_typer(llm_app, name="llm", help="Serve and check the LLM endpoint.")
app.add_typer(env_app, name="env", help="Validate, inspect and generate environments.")
app.command("eval")(eval_command)
register_evolve_commands(app)
register_experiment_commands(app)


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


def main() -> None:
    """Entry point of the console script."""
    _return_large_frees_to_the_os()
    try:
        app()  # standalone mode: typer itself exits 2 on bad usage and raises SystemExit at the end
    except UserInputError as error:
        print(f"memevo: error: {error}", file=sys.stderr)
        sys.exit(2)
    except MemevoError as error:  # RunFailedError, LLMError after its retries, ...
        print(f"memevo: run failed: {error}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
