"""The pieces every benchmark environment shares: streamed JSON reading, answer normalisation and metrics,
judge verdict parsing, and per-category tables that say n/a instead of 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memevo.agents.errors import UserInputError
from memevo.environments import answer_scoring as scoring
from memevo.environments.benchmarks import files
from memevo.environments.benchmarks.judge import parse_rating, parse_verdict
from memevo.environments.benchmarks.scores import QuestionScore, by_category, mean_of_cells


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


def test_normalisation_drops_case_punctuation_and_articles() -> None:
    assert scoring.normalize_answer("The  Cat, and a Dog!") == "cat and dog"
    assert scoring.normalize_answer("The  Cat, and a Dog!", drop_and=True) == "cat dog"


def test_token_f1_exact_and_substring_match() -> None:
    assert scoring.token_f1("red car", "the red car") == 1.0
    assert scoring.token_f1("red bus", "red car") == 0.5
    assert scoring.token_f1("", "red car") == 0.0
    assert scoring.token_f1("no", "no way", closed_answers_strict=True) == 0.0
    assert scoring.exact_match("Paris.", "paris") and not scoring.exact_match("Paris, France", "Paris")
    assert scoring.substring_match("It is Paris, I think", "paris")
    assert scoring.best_over(scoring.exact_match, "city 38", ["City38", "city 38"]) == 1.0
    assert scoring.fraction_contained("Alice met Bob", ["alice", "bob", "carol"]) == pytest.approx(2 / 3)


def test_stemming_is_applied_to_both_sides() -> None:
    def crude_stem(word: str) -> str:
        return word.removesuffix("s").removesuffix("ing")

    assert scoring.token_f1("paintings", "painting") == 0.0
    assert scoring.token_f1("paintings", "painting", stem=crude_stem) == 1.0


def test_answer_after_prefix_reads_the_answer_line() -> None:
    assert scoring.answer_after_prefix("Let me think.\nAnswer: B\nbecause") == "B"
    assert scoring.answer_after_prefix("label: 12", "label:") == "12"
    assert scoring.answer_after_prefix("first line\nsecond") == "first line"


@pytest.mark.parametrize(("reply", "verdict"), [("Yes.", True), ("no, the date is wrong", False),
                                                 ("Correct", True), ("I cannot tell", None), ("", None)])
def test_judge_verdicts(reply: str, verdict: bool | None) -> None:
    assert parse_verdict(reply) is verdict


def test_judge_ratings_take_the_first_number_in_range() -> None:
    assert parse_rating("Score: 4/5", low=1, high=5) == 4
    assert parse_rating("9 out of 10", low=1, high=5) is None


def test_tables_say_na_for_unscored_categories_and_averages() -> None:
    scores = [QuestionScore(item_id="i", question_id=f"q{n}", category=category, metric="f1", value=value,
                            na_reason=None if value is not None else "needs a judge")
              for n, (category, value) in enumerate([("b", 1.0), ("a", 0.0), ("a", None), ("c", None)])]
    table = by_category("demo", scores, order=["a", "b"])
    assert list(table.by_category) == ["a", "b", "c"]
    assert table.by_category["a"].mean == 0.0 and table.by_category["a"].scored == 1
    assert table.by_category["c"].text() == "n/a (needs a judge x1)"
    assert table.overall.mean == 0.5 and "2 unscored" in table.overall.text()
    assert mean_of_cells(table.by_category.values(), "f1").mean is None
    assert mean_of_cells([table.by_category["a"], table.by_category["b"]], "f1").mean == 0.5


def test_a_limit_stops_reading_before_a_later_broken_record(tmp_path: Path) -> None:
    from memevo.environments.benchmarks.longmemeval import read_records

    good = {"question_id": "q0", "question_type": "multi-session", "question": "Where?", "answer": "Lisbon",
            "question_date": "2023/06/01 (Thu) 10:00", "haystack_session_ids": ["s"],
            "haystack_dates": ["2023/05/01 (Mon) 09:00"], "haystack_sessions": [[{"role": "user", "content": "hi"}]]}
    path = tmp_path / "longmemeval_s.json"
    path.write_text(json.dumps([good, {"question_id": "broken"}]), encoding="utf-8")
    assert [record.question_id for record in read_records(path, limit=1)] == ["q0"]
    with pytest.raises(UserInputError):
        read_records(path)
