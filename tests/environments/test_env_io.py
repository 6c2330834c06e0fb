"""Loading and saving AMemGym data: data.json round trip, Hugging Face forms, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import pandas as pd
import pytest

from memevo.core.errors import UserInputError
from memevo.environments.amemgym.data.io import load_items, save_items

FIXTURE = Path(__file__).parents[1] / "fixtures" / "amemgym_small.json"


def _rows() -> list[dict]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def _dumped(items) -> list[dict]:
    return [item.model_dump(mode="json") for item in items]


def test_round_trip_is_byte_identical(tmp_path: Path) -> None:
    items = load_items(FIXTURE)
    assert [item.id for item in items] == [row["id"] for row in _rows()]
    save_items(items, tmp_path / "data.json")
    assert (tmp_path / "data.json").read_bytes() == FIXTURE.read_bytes()


def test_round_trip_keeps_values_of_compact_json(tmp_path: Path) -> None:
    compact = tmp_path / "compact.json"
    compact.write_text(json.dumps(_rows(), separators=(",", ":"), ensure_ascii=True), encoding="utf-8")
    save_items(load_items(compact), tmp_path / "out.json")
    assert json.loads((tmp_path / "out.json").read_text(encoding="utf-8")) == _rows()
    assert "Quiñones" in (tmp_path / "out.json").read_text(encoding="utf-8")


def test_directory_with_data_json(tmp_path: Path) -> None:
    (tmp_path / "data.json").write_bytes(FIXTURE.read_bytes())
    assert _dumped(load_items(tmp_path)) == _rows()


def test_parquet_with_union_schema_drops_null_keys(tmp_path: Path) -> None:
    dataset = datasets.Dataset.from_list(_rows())
    # The two users have disjoint variables, so the struct columns are unions with nulls to drop.
    assert dataset[1]["state_schema"]["living_situation"] is None
    assert dataset[1]["periods"][1]["updates"]["sleep"] is None
    dataset.to_parquet(str(tmp_path / "v1.base.parquet"))
    assert _dumped(load_items(tmp_path / "v1.base.parquet")) == _rows()
    assert _dumped(load_items(tmp_path)) == _rows()


def test_parquet_with_timestamp_dates(tmp_path: Path) -> None:
    frame = datasets.Dataset.from_list(_rows()).to_pandas()
    frame["start_time"] = pd.to_datetime(frame["start_time"])
    datasets.Dataset.from_pandas(frame).to_parquet(str(tmp_path / "data.parquet"))
    assert [item.start_time for item in load_items(tmp_path / "data.parquet")] == ["2020-10-01", "2020-10-01"]


def test_saved_dataset_dict_picks_split(tmp_path: Path) -> None:
    dataset = datasets.Dataset.from_list(_rows())
    datasets.DatasetDict({"v1.base": dataset}).save_to_disk(str(tmp_path / "saved"))
    assert _dumped(load_items(tmp_path / "saved")) == _rows()
    with pytest.raises(UserInputError, match="split 'v1.extra' not found"):
        load_items(tmp_path / "saved", split="v1.extra")


def test_saved_dataset_and_arrow_file(tmp_path: Path) -> None:
    datasets.Dataset.from_list(_rows()).save_to_disk(str(tmp_path / "saved"))
    assert _dumped(load_items(tmp_path / "saved")) == _rows()
    arrow = sorted((tmp_path / "saved").glob("*.arrow"))[0]
    assert _dumped(load_items(arrow)) == _rows()


def test_json_lines_export(tmp_path: Path) -> None:
    datasets.Dataset.from_list(_rows()).to_json(str(tmp_path / "export.json"))
    assert _dumped(load_items(tmp_path / "export.json")) == _rows()
    datasets.Dataset.from_list(_rows()[:1]).to_json(str(tmp_path / "one.jsonl"))
    assert _dumped(load_items(tmp_path / "one.jsonl")) == _rows()[:1]
    datasets.Dataset.from_list(_rows()[1:]).to_json(str(tmp_path / "one.json"))
    assert _dumped(load_items(tmp_path / "one.json")) == _rows()[1:]


def test_hub_id_offline_is_a_clear_user_error() -> None:
    with pytest.raises(UserInputError, match="AGI-Eval/AMemGym: cannot load hub dataset"):
        load_items("AGI-Eval/AMemGym")


def test_bad_json_names_file_and_position(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('[{"id": "x",}]', encoding="utf-8")
    with pytest.raises(UserInputError, match=r"bad\.json: invalid JSON at line 1 column"):
        load_items(bad)


def test_missing_field_names_file_item_and_path(tmp_path: Path) -> None:
    rows = _rows()
    del rows[1]["periods"][2]["sessions"][0]["session_time"]
    bad = tmp_path / "data.json"
    bad.write_text(json.dumps(rows), encoding="utf-8")
    with pytest.raises(UserInputError) as caught:
        load_items(bad)
    assert caught.value.source == str(bad)
    assert caught.value.field == "periods[2].sessions[0].session_time"
    assert f"item 1 (id '{rows[1]['id']}')" in str(caught.value)


def test_wrong_type_and_non_array(tmp_path: Path) -> None:
    rows = _rows()
    rows[0]["user_profile"]["age"] = "thirty"
    bad = tmp_path / "data.json"
    bad.write_text(json.dumps(rows), encoding="utf-8")
    with pytest.raises(UserInputError, match=r"'user_profile\.age'"):
        load_items(bad)
    bad.write_text('{"id": "x"}', encoding="utf-8")
    with pytest.raises(UserInputError, match="expected a JSON array"):
        load_items(bad)


def test_missing_path_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match="no such file"):
        load_items(tmp_path / "nope.json")


def test_missing_field_in_parquet_is_reported_as_missing(tmp_path: Path) -> None:
    rows = _rows()
    for row in rows:
        del row["qas"]
    datasets.Dataset.from_list(rows).to_parquet(str(tmp_path / "data.parquet"))
    with pytest.raises(UserInputError, match="'qas': Field required") as caught:
        load_items(tmp_path / "data.parquet")
    assert caught.value.field == "qas" and caught.value.source == str(tmp_path / "data.parquet")
