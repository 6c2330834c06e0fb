"""Optional libraries behind an agent kind: a missing one is one line naming the command that installs it."""

from __future__ import annotations

import importlib
from types import ModuleType

from memevo.core.errors import UserInputError


def import_extra(module: str, *, extra: str, kind: str) -> ModuleType:
    """``module`` imported, or a ``UserInputError`` (exit code 2) saying how to install the extra ``extra``."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise UserInputError(
            f"agent kind '{kind}' needs the '{extra}' extra ({error.name or module} is not installed): "
            f"pip install 'memevo[{extra}]'", field="kind",
        ) from None
