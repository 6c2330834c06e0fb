"""The pieces the benchmark environments share: streamed JSON reading and the benchmarks' own scoring variants."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memevo.core.errors import UserInputError
from memevo.environments.benchmarks import answer_scoring as scoring
from memevo.environments.benchmarks import files


def test_streamed_array_equals_a_whole_read_across_chunk_edges(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files, "_FIRST_READ", 7)
    values = [{"text": "é" * n, "n": 10 ** n, "list": [1.5, None, True]} for n in range(12)] + [12345, "tail"]
    path = tmp_path / "data.json"
    path.write_text(json.dumps(values, indent=1, ensure_ascii=False), encoding="utf-8")
    assert [value for _, value in files.iter_json_records(path)] == values


@pytest.mark.parametrize(("text", "message"), [
    ('[{"a": 1}, {"a": "cut', "array element 1: the file ends inside it"),
    ('[{"a": 1} {"a": 2}]', "expected ',' or ']'"),
    ('[{"a": 1}, {"a": nope}]', "array element 1: Expecting value"),
    ('[{"a": 1},', "the array is not closed"),
    ('[{"a": 1}, {"a": tr', "array element 1: the file ends inside it"),
])
def test_broken_arrays_name_the_file_and_element(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str,
                                                 message: str) -> None:
    monkeypatch.setattr(files, "_FIRST_READ", 4)
    path = tmp_path / "data.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UserInputError, match=message) as caught:
        list(files.iter_json_records(path))
    assert caught.value.source == str(path)


def test_a_top_level_object_over_the_limit_is_refused_before_reading(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files, "WHOLE_FILE_LIMIT", 10)
    path = tmp_path / "data.json"
    path.write_text(json.dumps({"records": list(range(50))}), encoding="utf-8")
    with pytest.raises(UserInputError, match="read whole and the limit is"):
        list(files.iter_json_records(path))


def test_empty_and_missing_files_are_user_errors(tmp_path: Path) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(UserInputError, match="empty"):
        list(files.iter_json_records(empty))
    with pytest.raises(UserInputError, match="no such file"):
        list(files.iter_json_records(tmp_path / "absent.json"))


def test_locomo_form_drops_and_and_stems_both_sides() -> None:
    def crude_stem(word: str) -> str:
        return word.removesuffix("s").removesuffix("ing")

    assert scoring.locomo_tokens("The Cats, and a Dog!", None) == "cats dog"
    assert scoring.locomo_f1("paintings", "painting", None) == 0.0
    assert scoring.locomo_f1("paintings", "painting", crude_stem) == 1.0
    assert scoring.multi_part_f1("red, blue", "blue, green", None) == 0.5


def test_memoryagentbench_matches() -> None:
    assert scoring.substring_match("It is Paris, I think", "paris") == 1.0
    assert scoring.substring_match("Paris", "Paris, France") == 0.0
    assert scoring.best_over(scoring.substring_match, "city 38", ["City38", "city 38"]) == 1.0
    assert scoring.contains_all("Alice met Bob", ["alice", "bob"]) == 1.0
    assert scoring.contains_all("Alice met Bob", ["alice", "carol"]) == 0.0
    assert scoring.contains_all("anything", []) == 0.0


def test_answer_after_prefix_reads_the_answer_line() -> None:
    assert scoring.answer_after_prefix("Let me think.\nAnswer: B\nbecause") == "B"
    assert scoring.answer_after_prefix("label: 12", "label:") == "12"
    assert scoring.answer_after_prefix("first line\nsecond") == "first line"


def test_a_limit_stops_reading_before_a_later_broken_record(tmp_path: Path) -> None:
    from memevo.environments.benchmarks.longmemeval import read_records

    good = {"question_id": "q0", "question_type": "multi-session", "question": "Where?", "answer": "Lisbon",
            "question_date": "2023/06/01 (Thu) 10:00", "haystack_session_ids": ["s"],
            "haystack_dates": ["2023/05/01 (Mon) 09:00"], "haystack_sessions": [[{"role": "user", "content": "hi"}]]}
    path = tmp_path / "longmemeval_s.json"
    path.write_text(json.dumps([good, {"question_id": "broken"}]), encoding="utf-8")
    assert [record.question_id for record in read_records(path, limit=1)] == ["q0"]
    with pytest.raises(UserInputError):
        list(read_records(path))
