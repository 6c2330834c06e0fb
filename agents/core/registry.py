"""One shape for every "name -> implementation" table in memevo (agents, environments, proposers, strategies,
trackers, ...).

Entries are either the object itself or a ``"package.module:attribute"`` target imported on first use, so that
reading a config never imports a heavy library; plug-ins may add entries through an entry-point group. A name is
checked where the object is built (``get``), with a ``UserInputError`` listing the known names.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar, cast

from memevo.core.errors import UserInputError

T = TypeVar("T")


class Registry(Generic[T]):
    """Names of one ``kind`` of implementation, built-in ones given as lazy targets, plug-ins found once in
    ``entry_point_group`` (entry-point name = registry name)."""

    def __init__(self, kind: str, builtins: dict[str, str] | None = None, *,
                 entry_point_group: str | None = None) -> None:
        self.kind = kind
        self.entry_point_group = entry_point_group
        self._targets: dict[str, Callable[[], T]] = {
            name: self._importer(name, target) for name, target in (builtins or {}).items()}
        """Names not imported yet and what imports each (a ``module:attribute`` target or an entry point's load)."""
        self._loaded: dict[str, T] = {}
        self._discovered = entry_point_group is None

    def register(self, name: str, target: T | str) -> None:
        """Add ``name``: the implementation itself or its ``"module:attribute"``; registering a name again
        replaces it (a notebook cell run again)."""
        self._loaded.pop(name, None)
        self._targets.pop(name, None)
        if isinstance(target, str):
            self._targets[name] = self._importer(name, target)
        else:
            self._loaded[name] = target

    def decorator(self, name: str) -> Callable[[T], T]:
        """``@registry.decorator("name")`` registers what it decorates under ``name``."""

        def decorate(implementation: T) -> T:
            self.register(name, implementation)
            return implementation

        return decorate

    def names(self) -> list[str]:
        self._discover()
        return sorted({*self._targets, *self._loaded})

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self.names()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def loaded(self, name: str) -> T | None:
        """The implementation of ``name`` if it is already imported (nothing is imported to answer)."""
        return self._loaded.get(name)

    def get(self, name: str, *, field: str | None = None) -> T:
        """The implementation registered under ``name``; an unknown name, or one whose module is missing from this
        installation, is a ``UserInputError`` naming ``field``."""
        if name in self._loaded:
            return self._loaded[name]
        if name not in self._targets:
            self._discover()
        if name in self._loaded:
            return self._loaded[name]
        if name not in self._targets:
            raise UserInputError(f"unknown {self.kind} '{name}' (known: {', '.join(self.names())})", field=field)
        try:
            implementation = self._targets[name]()
        except UserInputError as error:
            raise UserInputError(error.message, field=field) from None
        self._loaded.setdefault(name, implementation)  # importing the module may have registered it already
        return self._loaded[name]

    def _importer(self, name: str, target: str) -> Callable[[], T]:
        """What imports ``target``; a module missing from this installation is a ``UserInputError``, a module that
        fails inside is its own error."""

        def load() -> T:
            module_name, _, attribute = target.partition(":")
            try:
                module = importlib.import_module(module_name)
            except ModuleNotFoundError as error:
                if error.name is None or not module_name.startswith(error.name):
                    raise
                raise UserInputError(f"{self.kind} '{name}' is not available in this installation ({module_name} "
                                     "is missing)") from None
            return cast(T, getattr(module, attribute))

        return load

    def _discover(self) -> None:
        """Load the entry-point plug-ins once; a built-in name wins over a plug-in of the same name."""
        if self._discovered:
            return
        self._discovered = True
        from importlib.metadata import entry_points  # ~15 ms to import, and only plug-ins need it

        assert self.entry_point_group is not None
        for entry in entry_points(group=self.entry_point_group):
            if entry.name not in self._targets and entry.name not in self._loaded:
                self._targets[entry.name] = entry.load
