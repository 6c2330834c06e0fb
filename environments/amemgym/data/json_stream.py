"""The elements of a JSON array in a file, decoded one at a time as the file is read.

A data file can be large (every user's sessions and messages): reading it whole kept the text, the parsed rows
and the validated items in memory together, and a file with an error near its end was read and parsed whole before
the error showed. Here the file is read in chunks and only the element being decoded is held, so memory grows with
the largest user, not the file; an error is reported at its line and column as soon as it is reached.

Built on the standard library's ``JSONDecoder.raw_decode`` (no streaming parser is among the dependencies).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, TextIO

CHUNK_CHARS = 1 << 20
_DECODER = json.JSONDecoder()
_WHITESPACE = " \t\n\r"
_NEAR_END = 64
"""A decoding error this close to the end of the text read so far may be an element cut by the chunk boundary."""


class JSONStreamError(ValueError):
    """Invalid JSON at ``line`` and ``column`` (1-based) of the file."""

    def __init__(self, msg: str, line: int, column: int) -> None:
        super().__init__(f"invalid JSON at line {line} column {column}: {msg}")
        self.msg, self.line, self.column = msg, line, column


class _Text:
    """The part of the file not yet decoded, with where it starts in the file (for error positions)."""

    def __init__(self, file: TextIO, chunk_chars: int) -> None:
        self.file, self.chunk_chars = file, chunk_chars
        self.buffer, self.pos, self.eof = "", 0, False
        self.lines_before = 0
        self.column_before = 0
        """Characters on the buffer's first line that were already dropped."""

    def more(self) -> bool:
        """Read another chunk, dropping what was decoded; False (and nothing dropped) at the end of the file."""
        chunk = "" if self.eof else self.file.read(self.chunk_chars)
        if not chunk:
            self.eof = True
            return False
        dropped = self.pos
        newlines = self.buffer.count("\n", 0, dropped)
        if newlines:
            self.lines_before += newlines
            self.column_before = dropped - self.buffer.rfind("\n", 0, dropped) - 1
        else:
            self.column_before += dropped
        self.buffer, self.pos = self.buffer[dropped:] + chunk, 0
        return True

    def next_char(self) -> str:
        """The next character that is not whitespace (not consumed), "" at the end of the file."""
        while True:
            while self.pos < len(self.buffer) and self.buffer[self.pos] in _WHITESPACE:
                self.pos += 1
            if self.pos < len(self.buffer) or not self.more():
                return self.buffer[self.pos:self.pos + 1]

    def error(self, msg: str, at: int | None = None) -> JSONStreamError:
        index = self.pos if at is None else at
        newline = self.buffer.rfind("\n", 0, index)
        line = self.lines_before + self.buffer.count("\n", 0, index) + 1
        column = index - newline if newline >= 0 else self.column_before + index + 1
        return JSONStreamError(msg, line, column)

    def value(self) -> Any:
        """Decode the value at the current position, reading on while it may be cut by the chunk boundary."""
        while True:
            try:
                value, end = _DECODER.raw_decode(self.buffer, self.pos)
            except json.JSONDecodeError as error:
                cut = error.msg.startswith("Unterminated string") or error.pos >= len(self.buffer) - _NEAR_END
                if cut and self.more():
                    continue
                raise self.error(error.msg, error.pos) from None
            if end == len(self.buffer) and self.more():  # a number or literal may go on in the next chunk
                continue
            self.pos = end
            return value


def array_elements(file: TextIO, *, chunk_chars: int = CHUNK_CHARS) -> Iterator[Any]:
    """The elements of the JSON array ``file`` holds, one at a time; raises ``JSONStreamError`` at the first place
    the text is not a JSON array (the file must start with ``[`` after whitespace)."""
    text = _Text(file, chunk_chars)
    if text.next_char() != "[":
        raise text.error("Expecting '['")
    text.pos += 1
    if text.next_char() == "]":
        text.pos += 1
    else:
        while True:
            yield text.value()
            separator = text.next_char()
            text.pos += 1
            if separator == "]":
                break
            if separator != ",":
                raise text.error("Expecting ',' delimiter", text.pos - 1)
            text.next_char()
    if text.next_char():
        raise text.error("Extra data")
