"""Load and save AMemGym items: the reference ``data.json`` and the same data as a Hugging Face dataset.

Accepted sources for :func:`load_items`:

- a ``data.json`` file (a JSON array of items, as the reference generator writes it), or a JSON-lines file; both
  are read as a stream, one user at a time (``json_stream``), so memory follows the items, not the file's size
  (a file above ``SYNTAX_FIRST_BYTES`` is checked for JSON syntax in a first streamed pass, so a damaged large file
  fails holding one user's text);
- a directory written by ``datasets.Dataset.save_to_disk`` (a ``DatasetDict`` picks ``split``), or a
  directory holding ``data.json`` or ``*.parquet`` / ``*.arrow`` files;
- a single ``.parquet`` or ``.arrow`` file;
- a hub id such as ``AGI-Eval/AMemGym`` (split ``v1.base``), which needs network access.

The Hugging Face form stores mapping fields (``state_schema``, ``state``, ``updates``, ``update_cnts``,
``exposed_states``) as structs over the union of every user's keys, so a user's missing keys come back
as ``null``; they are dropped here. Dates shown as timestamps by the parquet conversion are turned back
into the reference's strings.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

from pydantic import ValidationError

from memevo.core.atomic_files import write_text_atomic
from memevo.core.errors import UserInputError
from memevo.environments.amemgym.data.json_stream import CHUNK_CHARS, JSONStreamError, array_elements
from memevo.environments.amemgym.data.models import Item

DEFAULT_SPLIT = "v1.base"
SYNTAX_FIRST_BYTES = 32 * 2**20
"""Data files above this size (AMemGym's v1.base is 2.24 MB) are checked for JSON syntax before items are built."""
_DATASET_SUFFIXES = (".parquet", ".arrow")


def load_items(source: str | Path, *, split: str = DEFAULT_SPLIT) -> list[Item]:
    """Items from a data file, a dataset directory or file, or a hub id (see the module docstring)."""
    path = Path(source)
    if path.is_dir():
        return _load_directory(path, split)
    if path.is_file():
        if path.suffix in _DATASET_SUFFIXES:
            return _rows_to_items(_read_dataset_files([path]), str(path))
        return _load_json_file(path)
    if _looks_like_hub_id(str(source)):
        return _rows_to_items(_read_hub(str(source), split), f"{source} (split {split})")
    raise UserInputError("no such file or directory", source=str(source))


def save_items(items: Iterable[Item], path: str | Path) -> None:
    """Write ``data.json`` as the reference does (indented, UTF-8 kept) and atomically."""
    payload = [item.model_dump(mode="json") for item in items]
    write_text_atomic(Path(path), json.dumps(payload, indent=2, ensure_ascii=False) + "\n")


def format_validation_error(error: ValidationError, *, limit: int = 5) -> tuple[str, str]:
    """(first field path, readable message) for a pydantic error, paths like ``periods[2].state``."""
    lines = []
    paths = []
    for detail in error.errors()[:limit]:
        field = _field_path(detail["loc"])
        paths.append(field)
        lines.append(f"'{field}': {detail['msg']}" if field else detail["msg"])
    more = error.error_count() - len(lines)
    if more > 0:
        lines.append(f"... and {more} more")
    return (paths[0] if paths else ""), "; ".join(lines)


def _field_path(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def _load_json_file(path: Path) -> list[Item]:
    """Items from a JSON array, JSON lines or one user's object, read as a stream (``json_stream``): memory for the
    items and one user's text, not for the whole file."""
    try:
        with path.open(encoding="utf-8") as file:
            first = _first_char(file)
            if path.suffix == ".jsonl" or (first == "{" and _is_json_lines(file)):
                _check_syntax_first(file, path, lambda: _json_lines(file, path))
                return _rows_to_items(_json_lines(file, path), str(path))
            if first == "[":
                _check_syntax_first(file, path, lambda: array_elements(file))
                return _validate_rows(array_elements(file), str(path))
            if first != "{":  # not data: say what the file starts with, without reading it all
                raise UserInputError(_not_items(file.read(CHUNK_CHARS)), source=str(path))
            data = _parse_json(file.read(), path, None)  # one user's object
    except (OSError, UnicodeDecodeError) as error:
        raise UserInputError(f"cannot read: {error}", source=str(path)) from error
    except JSONStreamError as error:
        raise UserInputError(str(error), source=str(path)) from error
    if isinstance(data, dict) and "periods" in data:  # a one-user JSON-lines export
        return _rows_to_items([data], str(path))
    raise UserInputError(f"expected a JSON array of items, got {type(data).__name__}", source=str(path))


def _check_syntax_first(file: TextIO, path: Path, rows: Callable[[], Iterator[Any]]) -> None:
    """A file larger than ``SYNTAX_FIRST_BYTES`` is read through once for its JSON alone, each row dropped as soon as
    it is parsed, so a damaged one fails holding one user's text rather than every item before its error; the file
    is left at its start for the pass that builds the items."""
    if path.stat().st_size > SYNTAX_FIRST_BYTES:
        for _ in rows():
            pass
        file.seek(0)


def _not_items(start: str) -> str:
    """Why a file that starts with ``start`` (neither ``[`` nor ``{``) holds no items."""
    try:
        value, _ = json.JSONDecoder().raw_decode(start, len(start) - len(start.lstrip()))
    except json.JSONDecodeError as error:
        return f"invalid JSON at line {error.lineno} column {error.colno}: {error.msg}"
    return f"expected a JSON array of items, got {type(value).__name__}"


def _first_char(file: TextIO) -> str:
    """The file's first character that is not whitespace; the file is left at its start."""
    while chunk := file.read(4096):
        if chunk.strip():
            file.seek(0)
            return chunk.strip()[0]
    file.seek(0)
    return ""


def _is_json_lines(file: TextIO) -> bool:
    """Whether a file starting with ``{`` is a ``datasets``-exported ``.json`` file, one object per line rather than
    an array: its first line is a whole object and another follows. The file is left at its start."""
    lines = (line for line in file if line.strip())
    first, second = next(lines, ""), next(lines, "")
    file.seek(0)
    if not second.lstrip().startswith("{"):
        return False
    try:
        json.loads(first)
    except json.JSONDecodeError:
        return False
    return True


def _json_lines(file: TextIO, path: Path) -> Iterator[Any]:
    for number, line in enumerate(file, 1):
        if line.strip():
            yield _parse_json(line, path, number)


def _parse_json(text: str, path: Path, line: int | None) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        at = f"line {line}" if line is not None else f"line {error.lineno} column {error.colno}"
        raise UserInputError(f"invalid JSON at {at}: {error.msg}", source=str(path)) from error


def _load_directory(path: Path, split: str) -> list[Item]:
    if (path / "dataset_dict.json").is_file() or (path / "dataset_info.json").is_file():
        return _rows_to_items(_read_saved_dataset(path, split), str(path))
    if (path / "data.json").is_file():
        return _load_json_file(path / "data.json")
    files = sorted(p for p in path.rglob("*") if p.suffix in _DATASET_SUFFIXES)
    if not files:
        raise UserInputError("no data.json, saved dataset, parquet or arrow files found", source=str(path))
    return _rows_to_items(_read_dataset_files(files), str(path))


def _read_saved_dataset(path: Path, split: str) -> list[dict[str, Any]]:
    import datasets

    try:
        loaded = datasets.load_from_disk(str(path))
    except Exception as error:  # datasets raises many types for a damaged directory
        raise UserInputError(f"cannot load saved dataset: {error}", source=str(path)) from error
    if isinstance(loaded, datasets.DatasetDict):
        if split not in loaded:
            raise UserInputError(f"split {split!r} not found; available: {sorted(loaded)}", source=str(path))
        loaded = loaded[split]
    return loaded.to_list()


def _read_dataset_files(files: list[Path]) -> list[dict[str, Any]]:
    import datasets

    try:
        if files[0].suffix == ".parquet":
            dataset = datasets.Dataset.from_parquet([str(f) for f in files])
        else:
            dataset = datasets.concatenate_datasets([datasets.Dataset.from_file(str(f)) for f in files])
    except Exception as error:  # pyarrow and datasets raise many types for a bad file
        raise UserInputError(f"cannot read dataset file: {error}", source=str(files[0])) from error
    return dataset.to_list()


def _read_hub(dataset_id: str, split: str) -> list[dict[str, Any]]:
    import datasets

    try:
        dataset = datasets.load_dataset(dataset_id, split=split)
    except Exception as error:  # offline mode, missing repo or split: all are the user's to fix
        raise UserInputError(
            f"cannot load hub dataset (split {split!r}); it needs network access, or download it and pass the "
            f"local path instead: {type(error).__name__}: {error}",
            source=dataset_id,
        ) from error
    return dataset.to_list()


_LOCAL_SUFFIXES = (".json", ".jsonl", *_DATASET_SUFFIXES)


def _looks_like_hub_id(source: str) -> bool:
    """``owner/name``; a path ending in a data-file suffix or starting in an existing folder is local, so a
    missing local file fails at once instead of after retries against the hub."""
    parts = source.split("/")
    return (len(parts) == 2 and all(parts) and not source.startswith((".", "~")) and "\\" not in source
            and not source.endswith(_LOCAL_SUFFIXES) and not Path(parts[0]).is_dir())


def _rows_to_items(rows: Iterable[dict[str, Any]], source: str) -> list[Item]:
    return _validate_rows((_clean_row(row) for row in rows), source)


def _validate_rows(rows: Iterable[Any], source: str) -> list[Item]:
    """Each row as an ``Item``, validated as it comes (a stream's rows are not all held at once)."""
    items = []
    for index, row in enumerate(rows):
        try:
            items.append(Item.model_validate(row))
        except ValidationError as error:
            field, message = format_validation_error(error)
            item_id = row.get("id") if isinstance(row, dict) else None
            raise UserInputError(
                f"item {index} (id {item_id!r}) is invalid: {message}", source=source, field=field
            ) from error
    return items


def _clean_row(row: dict[str, Any]) -> dict[str, Any]:
    """Undo the dataset conversion: drop union-schema null keys, restore date strings.

    Only fields that are present are touched, so a missing field is still reported as missing.
    """
    row = _cleaned(row, {"state_schema": _drop_nulls, "start_time": _date_text})
    if isinstance(row.get("periods"), list):
        row["periods"] = [_clean_period(period) for period in row["periods"]]
    return row


def _clean_period(period: Any) -> Any:
    period = _cleaned(period, {"state": _drop_nulls, "updates": _drop_nulls, "update_cnts": _drop_nulls,
                               "period_start": _date_text, "period_end": _date_text})
    if isinstance(period, dict) and isinstance(period.get("sessions"), list):
        period["sessions"] = [
            _cleaned(session, {"exposed_states": _drop_nulls, "session_time": _timestamp_text, "messages": _list})
            for session in period["sessions"]
        ]
    return period


def _cleaned(record: Any, fixes: dict[str, Callable[[Any], Any]]) -> Any:
    if not isinstance(record, dict):
        return record
    record = dict(record)
    for key, fix in fixes.items():
        if key in record:
            record[key] = fix(record[key])
    return record


def _drop_nulls(mapping: Any) -> Any:
    """Remove keys a user lacks; an update struct whose fields are all null counts as missing too."""
    if not isinstance(mapping, dict):
        return mapping
    return {
        key: value
        for key, value in mapping.items()
        if value is not None and not (isinstance(value, dict) and all(v is None for v in value.values()))
    }


def _date_text(value: Any) -> Any:
    return value.strftime("%Y-%m-%d") if isinstance(value, (dt.datetime, dt.date)) else value


def _timestamp_text(value: Any) -> Any:
    return value.strftime("%Y-%m-%d %H:%M:%S") if isinstance(value, (dt.datetime, dt.date)) else value


def _list(value: Any) -> Any:
    """Arrow stores an empty ``messages`` list as null when every row lacks it."""
    return [] if value is None else value
