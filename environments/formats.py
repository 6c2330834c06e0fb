"""Which environment a data file belongs to, read from its first record, so that a file read as the wrong one is
refused with the flag that reads it (``--environment locomo``) rather than with the other format's missing fields.

Each environment class may declare ``record_keys``: keys every record of its JSON files has. A file is recognised
when its first record holds all of one environment's keys; files that are not JSON (Parquet, dataset folders, hub
ids) are not recognised, and their errors stand as they are.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from itertools import islice
from pathlib import Path

from memevo.core.errors import UserInputError
from memevo.core.setting_names import given, setting
from memevo.environments.registry import ENVIRONMENTS, environment_class

_JSON_SUFFIXES = (".json", ".jsonl")


def recognised(source: str | Path) -> str | None:
    """The environment whose records the JSON file ``source`` holds, None when none is recognised."""
    from memevo.environments.benchmarks.files import iter_json_records

    path = Path(source)
    if not path.is_file() or path.suffix not in _JSON_SUFFIXES:
        return None
    try:
        first = next((record for _, record in islice(iter_json_records(path), 1)), None)
    except (UserInputError, ValueError, OSError):
        return None
    if not isinstance(first, dict):
        return None
    for name in ENVIRONMENTS:
        keys: frozenset[str] = getattr(environment_class(name), "record_keys", frozenset())
        if keys and keys <= first.keys():
            return name
    return None


@contextmanager
def read_as(environment: str, source: str | Path) -> Iterator[None]:
    """Reading ``source`` as ``environment``'s data: a refusal of a file that is another environment's names the
    ``--environment`` that reads it instead of the fields this one misses."""
    try:
        yield
    except UserInputError as error:
        other = recognised(source)
        if other is None or other == environment:
            raise
        raise UserInputError(f"this is a {other} file, not {environment} data: add {given('environment', other)}",
                             source=str(source), field=setting("environment")) from error
