"""MemoryBench as an environment: its dataset snapshot (``dataset/<name>/{train,test}`` saved by ``datasets``,
``corpus/<name>.jsonl``), training dialogs with implicit feedback replayed, test prompts scored per dataset."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import datasets
import pytest
from typer.testing import CliRunner

from memevo.agents.errors import UserInputError
from memevo.environments.benchmarks.judge import Judge
from memevo.environments.benchmarks.memorybench import MemoryBenchEnvironment
from memevo.environments.cli import app
from tests.doubles.replay_agents import ReplayRecordingAgent
from tests.doubles.scripted_llm import ScriptedLLM

runner = CliRunner()


def nfcats_record(index: int, with_dialog: bool = True) -> dict[str, Any]:
    dialog = [{"role": "user", "content": f"Why is the sky blue? ({index})"},
              {"role": "assistant", "content": "Because of scattering."},
              {"role": "user", "content": "Too short, explain Rayleigh scattering."},
              {"role": "assistant", "content": "Shorter wavelengths scatter more."}]
    feedback = [{"round": 1, "implicit_action": "dislike", "terminated": False},
                {"round": 2, "implicit_action": "like", "terminated": True}]
    return {"test_idx": index, "input_prompt": f"Why is the sky blue? ({index})", "dataset_name": "NFCats",
            "lang": "en", "info": "{}", "dialog": json.dumps(dialog) if with_dialog else "[]",
            "implicit_feedback": json.dumps(feedback) if with_dialog else "[]"}


def locomo_record(index: int, category: int, golden: Any) -> dict[str, Any]:
    return {"test_idx": index, "input_prompt": "What is Ana's dog called?", "dataset_name": "Locomo-0", "lang": "en",
            "info": str({"category": category, "golden_answer": golden, "evidence": ["D1:1"]}),
            "dialog_wo_memory": json.dumps([{"role": "user", "content": "Who is Rex?"},
                                            {"role": "assistant", "content": "Ana's dog."}]),
            "implicit_feedback_wo_memory": "[]"}


def snapshot(root: Path) -> Path:
    for name, splits in {
        "NFCats": {"train": [nfcats_record(0), nfcats_record(1)], "test": [nfcats_record(2, with_dialog=False)]},
        "Locomo-0": {"train": [locomo_record(0, 4, "Rex")],
                     "test": [locomo_record(1, 4, "Rex"),
                              locomo_record(2, 5, json.dumps({"a": "Not mentioned in the conversation",
                                                              "b": "Rex"}))]},
        "WritingPrompts": {"train": [nfcats_record(0) | {"dataset_name": "WritingPrompts"}],
                           "test": [nfcats_record(1) | {"dataset_name": "WritingPrompts"}]},
    }.items():
        for split, records in splits.items():
            datasets.Dataset.from_list(records).save_to_disk(str(root / "dataset" / name / split))
    corpus = {"conversation": {"speaker_a": "Ana", "speaker_b": "Ben", "session_1_date_time": "1:56 pm on 8 May, 2023",
                               "session_1": [{"speaker": "Ana", "dia_id": "D1:1", "text": "My dog is Rex."}]}}
    (root / "corpus").mkdir()
    (root / "corpus" / "Locomo-0.jsonl").write_text(json.dumps({"text": json.dumps(corpus)}) + "\n",
                                                    encoding="utf-8")
    return root


def test_training_dialogs_replay_with_implicit_feedback_and_corpus_first(tmp_path: Path) -> None:
    environment = MemoryBenchEnvironment(snapshot(tmp_path / "MemoryBench"))
    items = {item.item_id: item for item in environment.items()}
    nfcats = items["NFCats"]
    assert [s.session_id for s in nfcats.sessions] == ["NFCats/train/0", "NFCats/train/1"]
    exchanges = nfcats.sessions[0].exchanges
    assert exchanges[0].user == "Why is the sky blue? (0)" and exchanges[0].assistant == "Because of scattering."
    assert exchanges[1].user.startswith("(Your last reply got: dislike.) Too short")
    assert exchanges[2].user == "(Your last reply got: like; the user ended the conversation.)"
    assert [q.question_id for q in nfcats.questions] == ["NFCats/test/2"]
    locomo = items["Locomo-0"]
    assert locomo.sessions[0].session_id == "Locomo-0/session_1"
    assert locomo.sessions[0].exchanges[0].user == "Ana: My dog is Rex."
    assert locomo.sessions[1].exchanges[0].assistant == "Ana's dog."  # dialog_wo_memory when there is no dialog


def test_each_dataset_scores_with_its_metric_or_says_what_it_needs(tmp_path: Path) -> None:
    llm = ScriptedLLM(lambda messages, role, wants_json: "4")
    environment = MemoryBenchEnvironment(snapshot(tmp_path / "MemoryBench"), judge=Judge(llm))
    scores = []
    for item in environment.items():
        agent = ReplayRecordingAgent(lambda prompt, memory: "Rex" if "dog" in prompt else "Scattering of light.")
        scores += asyncio.run(environment.run_item(agent, item))
    by_question = {score.question_id: score for score in scores}
    assert by_question["Locomo-0/test/1"].value == 1.0
    assert by_question["Locomo-0/test/2"].value == 0.0  # adversarial: the reply named the adversarial answer
    assert by_question["NFCats/test/2"].value == 4.0 and by_question["NFCats/test/2"].metric == "judge rating 1-5"
    writing = by_question["WritingPrompts/test/1"]
    assert writing.value is None and "METEOR" in (writing.na_reason or "")
    assert [call["role"] for call in llm.calls] == ["judge"]


def test_a_split_folder_without_data_names_the_folder(tmp_path: Path) -> None:
    root = snapshot(tmp_path / "MemoryBench")
    for file in (root / "dataset" / "NFCats" / "test").iterdir():
        file.unlink()
    with pytest.raises(UserInputError, match="no Arrow or Parquet files") as caught:
        MemoryBenchEnvironment(root).items()
    assert caught.value.source == str(root / "dataset" / "NFCats" / "test")


def test_a_record_without_its_language_names_file_and_field(tmp_path: Path) -> None:
    root = tmp_path / "MemoryBench"
    record = nfcats_record(0)
    del record["lang"]
    for split in ("train", "test"):
        datasets.Dataset.from_list([record]).save_to_disk(str(root / "dataset" / "NFCats" / split))
    with pytest.raises(UserInputError) as caught:
        MemoryBenchEnvironment(root).items()
    assert caught.value.field == "[0].lang" and caught.value.source.endswith(".arrow")


def test_env_stats_reads_the_snapshot(tmp_path: Path) -> None:
    root = snapshot(tmp_path / "MemoryBench")
    result = runner.invoke(app, ["stats", "-e", "memorybench", "--json", str(root)])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.output)
    assert figures["items"] == 3 and figures["questions_per_category"]["Locomo-0"] == 2
