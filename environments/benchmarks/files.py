"""Reading benchmark data files the user downloaded: size checks, streamed JSON arrays and JSON lines,
Arrow/Parquet tables row by row, and validation errors that name the file and the field.

A JSON array is decoded one element at a time from a growing buffer, so a multi-gigabyte file (LongMemEval M)
never sits in memory as text; only a top-level JSON object must be read whole, and that is refused above
``WHOLE_FILE_LIMIT`` bytes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from memevo.core.errors import UserInputError
from memevo.environments.amemgym.data.io import format_validation_error

WHOLE_FILE_LIMIT = 256 * 1024 * 1024
_FIRST_READ = 1 << 20
_TABLE_SUFFIXES = (".parquet", ".arrow")

Record = TypeVar("Record", bound=BaseModel)


def existing_file(path: Path) -> Path:
    """``path`` when it is a non-empty readable file; else a ``UserInputError`` naming it."""
    if not path.exists():
        raise UserInputError("no such file or directory", source=str(path))
    if not path.is_file():
        raise UserInputError("expected a file, found a directory", source=str(path))
    if path.stat().st_size == 0:
        raise UserInputError("the file is empty", source=str(path))
    return path


def iter_json_records(path: Path) -> Iterator[tuple[int, Any]]:
    """(index, value) for each element of a top-level JSON array, each line of a JSON-lines file, or the one
    top-level object, streamed except for the last case."""
    with existing_file(path).open("rb") as handle:
        head = handle.read(_FIRST_READ)
    start = head.lstrip()[:1]
    if start == b"[":
        yield from enumerate(_stream_array(path))
    elif start == b"{" and _looks_like_json_lines(head):
        yield from _stream_lines(path)
    else:
        yield 0, _read_whole(path)


def iter_table_rows(paths: list[Path]) -> Iterator[tuple[Path, int, dict[str, Any]]]:
    """(file, row index, row) for Parquet files (read batch by batch) and Arrow files as ``datasets`` saves them
    (memory-mapped)."""
    for path in paths:
        existing_file(path)
        try:
            rows = _parquet_rows(path) if path.suffix == ".parquet" else _arrow_rows(path)
            yield from ((path, index, row) for index, row in enumerate(rows))
        except UserInputError:
            raise
        except Exception as error:  # pyarrow raises many types for a damaged file
            raise UserInputError(f"cannot read table: {type(error).__name__}: {error}", source=str(path)) from error


def table_files(folder: Path) -> list[Path]:
    """Every Parquet and Arrow file under ``folder``, sorted (shards stay in order)."""
    return sorted(path for path in folder.rglob("*") if path.suffix in _TABLE_SUFFIXES and path.is_file())


def validated(model: type[Record], value: Any, *, source: Path, prefix: str) -> Record:
    """``value`` as ``model``; a bad value raises one ``UserInputError`` naming the file and the full field path
    (``prefix`` locates the record, e.g. ``[3]``)."""
    try:
        return model.model_validate(value)
    except ValidationError as error:
        field, message = format_validation_error(error, limit=1)
        path = f"{prefix}.{field}" if field and not field.startswith("[") else f"{prefix}{field}"
        raise UserInputError(message.split(": ", 1)[-1] if field else message, source=str(source),
                             field=path or None) from error


def _looks_like_json_lines(head: bytes) -> bool:
    first_line, _, rest = head.strip().partition(b"\n")
    if not rest:
        return False
    try:
        json.loads(first_line)
    except json.JSONDecodeError:
        return False
    return True


def _stream_array(path: Path) -> Iterator[Any]:
    """Elements of a JSON array decoded one at a time; the read size doubles while an element is incomplete, so
    decoding stays linear in the file size."""
    decoder = json.JSONDecoder()
    with path.open(encoding="utf-8") as handle:
        reader = _Buffer(handle, path)
        reader.position = reader.text.index("[") + 1
        while True:
            if not reader.skip_space():
                raise reader.error("the array is not closed")
            if reader.current == "]" and (reader.elements == 0 or not reader.expect_value):
                return
            if not reader.expect_value:
                if reader.current != ",":
                    raise reader.error("expected ',' or ']' between elements")
                reader.position, reader.expect_value = reader.position + 1, True
                continue
            try:
                value, end = decoder.raw_decode(reader.text, reader.position)
            except json.JSONDecodeError as error:
                if not _maybe_cut_short(error, reader.text) or not reader.grow():
                    cut = reader.at_end and _cut_short(error, reader.text)
                    raise reader.error("the file ends inside it (cut short?)" if cut else error.msg,
                                       error.pos) from error
                continue
            if end >= len(reader.text) and reader.grow():  # a number may go on in the next chunk
                continue
            reader.read_size = _FIRST_READ
            reader.elements += 1
            yield value
            reader.position, reader.expect_value = end, False


def _maybe_cut_short(error: json.JSONDecodeError, text: str) -> bool:
    """Whether the error may only mean the element goes on past the buffer (so reading on may fix it)."""
    return error.msg.startswith("Unterminated string") or error.pos >= len(text) - 8


_LITERAL_START = re.compile(r"[-+0-9.eE]*|t(r(ue?)?)?|f(a(l(se?)?)?)?|n(u(ll?)?)?")


def _cut_short(error: json.JSONDecodeError, text: str) -> bool:
    """At the end of the file: whether the element stops mid-way (an open string, or a value begun but not
    finished) rather than holding a mistake."""
    return error.msg.startswith("Unterminated string") or bool(_LITERAL_START.fullmatch(text[error.pos:].strip()))


class _Buffer:
    """The undecoded tail of a text file and where decoding stands in it."""

    def __init__(self, handle: Any, path: Path) -> None:
        self.handle, self.path = handle, path
        self.read_size = _FIRST_READ
        self.text = self._read()
        self.position = 0
        self.expect_value = True
        self.at_end = False
        self.elements = 0

    @property
    def current(self) -> str:
        return self.text[self.position]

    def skip_space(self) -> bool:
        """Move past whitespace, reading on as needed; False at the end of the file."""
        while True:
            while self.position < len(self.text) and self.text[self.position] in " \t\r\n":
                self.position += 1
            if self.position < len(self.text):
                return True
            if not self.grow():
                return False

    def grow(self) -> bool:
        """Drop what is decoded and append the next chunk (doubling the chunk); False at the end of the file."""
        if self.at_end:
            return False
        chunk = self._read()
        self.at_end = not chunk
        self.text, self.position = self.text[self.position:] + chunk, 0
        self.read_size *= 2
        return bool(chunk)

    def error(self, message: str, position: int | None = None) -> UserInputError:
        at = self.position if position is None else position
        excerpt = self.text[max(0, at - 20):at + 20].replace("\n", " ")
        return UserInputError(f"invalid JSON in array element {self.elements}: {message} near {excerpt!r}",
                              source=str(self.path))

    def _read(self) -> str:
        try:
            return str(self.handle.read(self.read_size))
        except UnicodeDecodeError as error:
            raise UserInputError(f"not UTF-8 text: {error.reason}", source=str(self.path)) from error


def _stream_lines(path: Path) -> Iterator[tuple[int, Any]]:
    with path.open(encoding="utf-8") as handle:
        index = 0
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                yield index, json.loads(line)
            except json.JSONDecodeError as error:
                raise UserInputError(f"invalid JSON on line {number}: {error.msg}", source=str(path)) from error
            index += 1


def _read_whole(path: Path) -> Any:
    size = path.stat().st_size
    if size > WHOLE_FILE_LIMIT:
        raise UserInputError(f"a single JSON object of {size / 2**20:.0f} MiB is read whole and the limit is "
                             f"{WHOLE_FILE_LIMIT / 2**20:.0f} MiB; pass a JSON array or JSON lines instead",
                             source=str(path))
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as error:
        raise UserInputError(f"not UTF-8 text: {error.reason} at byte {error.start}", source=str(path)) from error
    except json.JSONDecodeError as error:
        raise UserInputError(f"invalid JSON at line {error.lineno} column {error.colno}: {error.msg}",
                             source=str(path)) from error


def _parquet_rows(path: Path) -> Iterator[dict[str, Any]]:
    import pyarrow.parquet as parquet

    for batch in parquet.ParquetFile(str(path)).iter_batches(batch_size=16):
        yield from batch.to_pylist()


def _arrow_rows(path: Path) -> Iterator[dict[str, Any]]:
    import datasets

    yield from datasets.Dataset.from_file(str(path))


def parse_date(text: str, date_format: str, example: str, path: Path, field: str) -> datetime:
    """A benchmark's date in its own format; otherwise a ``UserInputError`` showing what one looks like."""
    try:
        return datetime.strptime(text.strip(), date_format)
    except ValueError as error:
        raise UserInputError(f"date {text!r} is not like {example!r}", source=str(path), field=field) from error
