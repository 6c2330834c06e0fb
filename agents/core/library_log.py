"""Libraries' warnings go to the run's log file, not to the terminal.

DSPy, LiteLLM, httpx, Optuna and MLflow warn through ``logging`` (DSPy, LiteLLM and MLflow with stderr handlers of
their own, installed when they are first imported, often mid-run) or through ``warnings``. On the terminal they tear
progress bars and bury memevo's lines, and the one that matters (DSPy's "response was truncated") names nothing a
memevo user can set. While a ``LibraryLog`` is open, those loggers and Python's warnings write to its file only, and
the notices memevo words itself (``NOTICES``) are counted for it; closed, the loggers are as they were.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import logging
import sys
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType, TracebackType

RUN_LOG = "run.log"
"""The run folder's log file."""
LIBRARY_LEVELS = {
    "httpx": logging.WARNING,
    "httpx2": logging.WARNING,
    "httpcore": logging.WARNING,
    "openai": logging.WARNING,
    "LiteLLM": logging.WARNING,
    "LiteLLM Router": logging.WARNING,
    "LiteLLM Proxy": logging.WARNING,
    "litellm": logging.WARNING,
    "dspy": logging.ERROR,  # a proposer parse failure is summarised by memevo in one line instead
    "mlflow": logging.WARNING,
    "optuna": logging.WARNING,
    "alembic": logging.WARNING,
    "urllib3": logging.WARNING,
}
"""Libraries that print request lines or chatter at INFO, and the level the terminal holds each to."""
WARNINGS_LOGGER = "py.warnings"
"""Where ``logging.captureWarnings`` sends Python's warnings."""
ROUTED = (*LIBRARY_LEVELS, "sqlalchemy.engine", "huey", WARNINGS_LOGGER)
"""The loggers a ``LibraryLog`` sends to its file (MLflow configures the SQLAlchemy and huey ones as its own)."""
SELF_CONFIGURING = frozenset({"dspy", "litellm", "mlflow"})
"""Packages that give their loggers a stderr handler when imported: routed again once that import ends."""
TRUNCATED = "truncated"
NOTICES = {TRUNCATED: "response was truncated"}
"""Notices counted by name: the text a library's message contains."""
ALL = "all"
"""The count of every record the file got."""

_open: list[LibraryLog] = []


def current() -> LibraryLog | None:
    """The library log open now (the innermost), if any."""
    return _open[-1] if _open else None


class _CountingFile(logging.FileHandler):
    """The log file (opened at its first record, appended to by every process of a run), counting ``NOTICES``."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, encoding="utf-8", delay=True)
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        self.counts: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        self.counts.update([ALL, *(name for name, text in NOTICES.items() if text in message)])
        super().emit(record)


class LibraryLog:
    """Routes ``ROUTED`` and Python's warnings to ``path`` while open (a context manager), from WARNING up, again
    after each import of a package named in ``reroute_after``."""

    def __init__(self, path: Path, *, reroute_after: frozenset[str] = SELF_CONFIGURING) -> None:
        self.path = path
        self._file = _CountingFile(path)
        self._file.setLevel(logging.WARNING)
        self._saved: dict[str, tuple[int, bool, list[logging.Handler]]] = {}
        self._lock = threading.Lock()
        self._hook = _AfterImport(reroute_after, self.reroute)

    def count(self, notice: str = ALL) -> int:
        """Records so far that carried ``notice`` (one of ``NOTICES``; ``ALL``: every record)."""
        return self._file.counts[notice]

    def __enter__(self) -> LibraryLog:
        logging.captureWarnings(True)
        sys.meta_path.insert(0, self._hook)
        _open.append(self)
        self.reroute()
        return self

    def reroute(self) -> None:
        """Each routed logger writes its warnings to the file alone and stops propagating; what it had (or what a
        library imported since gave it) is put aside for ``__exit__``."""
        with self._lock:
            for name in ROUTED:
                logger = logging.getLogger(name)
                if name not in self._saved or logger.handlers != [self._file]:
                    theirs = [handler for handler in logger.handlers if handler is not self._file]
                    self._saved[name] = (logger.level, logger.propagate, theirs)
                logger.handlers = [self._file]
                logger.propagate = False
                logger.setLevel(logging.WARNING)

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        sys.meta_path.remove(self._hook)
        _open.remove(self)
        with self._lock:
            for name, (level, propagate, handlers) in self._saved.items():
                logger = logging.getLogger(name)
                if logger.handlers == [self._file]:  # an inner log or a later import may own it now: left alone
                    logger.handlers, logger.propagate = handlers, propagate
                    logger.setLevel(level)
        if not _open:
            logging.captureWarnings(False)
        self._file.close()


class _AfterImport(importlib.abc.MetaPathFinder):
    """Calls ``then`` after one of ``names`` has been imported (executed), wherever its spec comes from."""

    def __init__(self, names: frozenset[str], then: Callable[[], None]) -> None:
        self.names = names
        self.then = then
        self._finding = threading.local()

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> ModuleSpec | None:
        if fullname not in self.names or getattr(self._finding, "active", False):
            return None
        self._finding.active = True
        try:
            spec = importlib.util.find_spec(fullname)  # the finders after this one
        finally:
            self._finding.active = False
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _ThenLoader(spec.loader, self.then)
        return spec


class _ThenLoader(importlib.abc.Loader):
    """``loader``, then ``then``; the module keeps ``loader`` itself (its resources are read through it)."""

    def __init__(self, loader: importlib.abc.Loader, then: Callable[[], None]) -> None:
        self.loader = loader
        self.then = then

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        module.__loader__ = self.loader
        self.loader.exec_module(module)
        self.then()
