"""Damaged run files and a full disk, one unit at a time: ``run_files`` (set aside or name the remedy), the run
store's per-user repair, ``full_disk`` (however deep the error is wrapped), and the streamed data file
(``json_stream``), whose memory follows the largest user rather than the file."""

from __future__ import annotations

import errno
import io
import json
import logging
import os
import sqlite3
from pathlib import Path

import pytest
from pydantic import BaseModel

from memevo.core.errors import DamagedFileError, UserInputError
from memevo.core.full_disk import full_disk
from memevo.core.run_files import read_model, read_or_recompute
from memevo.environments.amemgym.data import io as io_module
from memevo.environments.amemgym.data.io import load_items
from memevo.environments.amemgym.data.json_stream import JSONStreamError, array_elements
from memevo.environments.records import PeriodResult
from memevo.environments.store import DAMAGED_USERS, RunStore

FIXTURE = Path(__file__).parents[1] / "fixtures" / "amemgym_small.json"


class Note(BaseModel):
    text: str


def test_a_damaged_record_that_is_recomputed_is_set_aside_saying_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "note.json"
    assert read_or_recompute(path, Note) is None  # never written
    path.write_text('{"text": "hel')
    (tmp_path / "note.json.damaged").write_text("an earlier one")
    with caplog.at_level(logging.WARNING):
        assert read_or_recompute(path, Note) is None
    assert not path.exists() and (tmp_path / "note.json.damaged-2").read_text() == '{"text": "hel'
    assert caplog.messages == [f"{path}: damaged: invalid JSON (EOF while parsing a string at line 1 column 13); set "
                               f"aside as {tmp_path / 'note.json.damaged-2'}, it is computed again"]
    path.write_text('{"text": "hello"}')
    assert read_or_recompute(path, Note) == Note(text="hello")


@pytest.mark.parametrize(("content", "reason"), [
    (b'{"text": 3}', "damaged: field 'text': Input should be a valid string"),
    (b"\xff\xfe", "damaged: invalid JSON ("),
    (b"", "damaged: invalid JSON (EOF while parsing a value at line 1 column 0)"),
])
def test_a_damaged_record_that_is_not_recomputed_names_the_file_and_the_remedy(
    content: bytes, reason: str, tmp_path: Path
) -> None:
    path = tmp_path / "plan.json"
    path.write_bytes(content)
    with pytest.raises(DamagedFileError) as damaged:
        read_model(path, Note, remedy="restore it from a backup")
    assert str(damaged.value).startswith(f"{path}: {reason}") and str(damaged.value).endswith("; restore it from a backup")
    assert path.read_bytes() == content  # left for the user to restore


def _store_with_two_periods(root: Path) -> RunStore:
    store = RunStore(root)
    store.bind("u1", policy_id="p", item_id="u1")
    for period in range(2):
        store.save_period(PeriodResult(user_id="u1", period=period), {"memory": period})
    return store


@pytest.mark.parametrize("damaged", ["period_00.json.gz", "period_01.state.json.gz", "meta.json"])
def test_a_user_whose_record_is_damaged_is_set_aside_when_its_run_goes_on(
    damaged: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = _store_with_two_periods(tmp_path)
    path = store.user_dir("u1") / damaged
    path.write_bytes(path.read_bytes()[:7])
    with caplog.at_level(logging.WARNING):
        store.bind("u1", policy_id="p", item_id="u1")
    assert store.finished_periods("u1") == 0  # played again from its first period
    assert (tmp_path / DAMAGED_USERS / "u1" / damaged).stat().st_size == 7
    (line,) = caplog.messages
    assert line.startswith(f"{store.user_dir('u1')}: {damaged} is damaged: ") and line.endswith(
        f"set aside as {tmp_path / DAMAGED_USERS / 'u1'}, its user is played again from the first period")


def test_a_sound_user_is_left_as_it_is(tmp_path: Path) -> None:
    store = _store_with_two_periods(tmp_path)
    store.bind("u1", policy_id="p", item_id="u1")
    assert store.finished_periods("u1") == 2 and store.load_state("u1", 1) == {"memory": 1}
    assert not (tmp_path / DAMAGED_USERS).exists()


def test_a_damaged_period_read_back_outside_a_run_names_the_folder_to_delete(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "evals" / "c1" / "test", owner=tmp_path / "evals" / "c1")
    _store_with_two_periods(store.root)
    path = store.user_dir("u1") / "period_01.json.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00 not gzip at all")
    with pytest.raises(DamagedFileError) as damaged:
        store.load_episode("u1")
    assert str(damaged.value).startswith(f"{path}: damaged: ")
    assert damaged.value.remedy == (f"restore it from a backup, or delete the folder {tmp_path / 'evals' / 'c1'} and "
                                    "resume (what it holds is played again)")


def _wrapped(error: BaseException, wrapper: BaseException) -> BaseException:
    try:
        try:
            raise error
        except BaseException as inner:
            raise wrapper from inner
    except BaseException as outer:
        return outer


class LibraryError(Exception):
    """Stands in for SQLAlchemy's or MLflow's wrapper of a database error."""


@pytest.mark.parametrize(("error", "line"), [
    (OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/runs/x/a.json"),
     "the disk is full (writing /runs/x/a.json): No space left on device"),
    (OSError(errno.EDQUOT, os.strerror(errno.EDQUOT)), f"the disk is full: {os.strerror(errno.EDQUOT)}"),
    (_wrapped(sqlite3.OperationalError("database or disk is full"), LibraryError("(sqlite3.OperationalError) "
                                                                                  "database or disk is full\n[SQL: ...]")),
     "the disk is full: database or disk is full"),
    (ExceptionGroup("tasks", [ValueError("other"), OSError(errno.ENOSPC, "No space left on device")]),
     "the disk is full: No space left on device"),
    (_wrapped(OSError(errno.ENOSPC, "No space left on device", "/c/cache.db"), RuntimeError("while saving")),
     "the disk is full (writing /c/cache.db): No space left on device"),
    (OSError(errno.EACCES, "Permission denied", "/x"), None),
    (ValueError("database or disk"), None),
])
def test_a_full_disk_is_found_however_it_is_wrapped(error: BaseException, line: str | None) -> None:
    assert full_disk(error) == line


def _elements(text: str, chunk_chars: int = 7) -> list[object]:
    return list(array_elements(io.StringIO(text), chunk_chars=chunk_chars))


@pytest.mark.parametrize("text", [
    "[]", " [ ] ", '[{"a": "x,]y"}, 12345678901234, true, null, [1, [2]], "\\u00e9\\"]"]',
    '[\n  {"id": "u1",\n   "n": 1.5e10},\n  {"id": "u2"}\n]\n',
])
def test_a_streamed_array_gives_what_json_gives_across_any_chunk_boundary(text: str) -> None:
    for chunk_chars in (1, 2, 3, 7, 64, 1 << 20):
        assert _elements(text, chunk_chars) == json.loads(text)


@pytest.mark.parametrize(("text", "line", "column", "message"), [
    ('[{"a": 1},\n {"a": 2,}]', 2, 10, "Expecting property name enclosed in double quotes"),
    ("[1, 2", 1, 6, "Expecting ',' delimiter"),
    ('[1]\n{"x": 1}', 2, 1, "Extra data"),
    ('{"a": 1}', 1, 1, "Expecting '['"),
    ('[1 2]', 1, 4, "Expecting ',' delimiter"),
    ('[1,]', 1, 4, "Expecting value"),
    ('[\n\n  "abc', 3, 3, "Unterminated string starting at"),
])
def test_a_streamed_array_reports_the_line_and_column_of_its_first_error(
    text: str, line: int, column: int, message: str
) -> None:
    for chunk_chars in (1, 3, 1 << 20):
        with pytest.raises(JSONStreamError) as error:
            _elements(text, chunk_chars)
        assert (error.value.line, error.value.column, error.value.msg) == (line, column, message), chunk_chars


def test_an_error_early_in_a_long_file_is_found_without_reading_the_rest() -> None:
    text = io.StringIO('[{"a": 1} {"b": 2}, ' + '{"c": 3}, ' * 100_000 + "{}]")
    with pytest.raises(JSONStreamError, match="line 1 column 11: Expecting ',' delimiter"):
        list(array_elements(text, chunk_chars=1024))
    assert text.tell() <= 2048


@pytest.mark.parametrize(("threshold", "built"), [(0, 0), (1 << 30, 2)], ids=["large file", "small file"])
def test_a_large_data_file_with_a_late_json_error_fails_before_any_item_is_built(
    threshold: int, built: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = json.loads(FIXTURE.read_text(encoding="utf-8"))
    text = json.dumps(rows)[:-1] + ', {"id": "cut'
    (tmp_path / "data.json").write_text(text, encoding="utf-8")
    made: list[object] = []
    monkeypatch.setattr(io_module, "SYNTAX_FIRST_BYTES", threshold)
    monkeypatch.setattr(io_module.Item, "model_validate", classmethod(lambda cls, row: made.append(row) or row))
    with pytest.raises(UserInputError, match=r"data\.json: invalid JSON at line 1 column \d+: Unterminated string"):
        load_items(tmp_path / "data.json")
    assert len(made) == built  # a small file builds the items before the error; a large one none


def test_a_state_left_by_a_kill_between_two_writes_goes_with_the_next_period(tmp_path: Path) -> None:
    store = _store_with_two_periods(tmp_path)
    folder = store.user_dir("u1")
    (folder / "period_00.state.json.gz").write_bytes((folder / "period_01.state.json.gz").read_bytes())  # not dropped
    store.save_period(PeriodResult(user_id="u1", period=2), {"memory": 2})
    assert sorted(path.name for path in folder.glob("*.state.json.gz")) == ["period_02.state.json.gz"]
