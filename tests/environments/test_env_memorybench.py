"""MemoryBench as an environment: its dataset snapshot (``dataset/<name>/{train,test}`` saved by ``datasets``,
``corpus/<name>.jsonl``), training dialogs with implicit feedback replayed, test prompts scored per dataset."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import datasets
import pytest
from typer.testing import CliRunner

from memevo.core.errors import UserInputError
from memevo.environments.benchmarks.memorybench import MemoryBenchEnvironment
from memevo.environments.cli import app
from memevo.environments.runner import EpisodeConfig
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
    """A LoCoMo record as the Hub has it: no dialog of its own, only those recorded with each baseline."""
    return {"test_idx": index, "input_prompt": "What is Ana's dog called?", "dataset_name": "Locomo-0", "lang": "en",
            "info": str({"category": category, "golden_answer": golden, "evidence": ["D1:1"]}),
            "dialog_mem0": json.dumps([{"role": "user", "content": "Who is Rex?"},
                                       {"role": "assistant", "content": "Ana's dog."}]),
            "implicit_feedback_mem0": "[]",
            "dialog_a_mem": json.dumps([{"role": "user", "content": "Is Rex a cat?"},
                                        {"role": "assistant", "content": "No, a dog."}]),
            "implicit_feedback_a_mem": json.dumps([{"round": 1, "implicit_action": "like"}])}


MEM0 = {"dialog_field": "dialog_mem0"}


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
    environment = MemoryBenchEnvironment(EpisodeConfig(), **MEM0)
    items = {item.id: item for item in environment.load_items(snapshot(tmp_path / "MemoryBench"))}
    assert environment.load_warnings == ["dataset WritingPrompts left out: its metric needs METEOR (nltk with WordNet)"]
    nfcats = items["NFCats"]
    assert [s.id for s in nfcats.sessions] == ["train/0", "train/1"]
    exchanges = nfcats.sessions[0].exchanges()
    assert exchanges[0] == ("Why is the sky blue? (0)", "Because of scattering.")
    assert exchanges[1][0].startswith("(Your last reply got: dislike.) Too short")
    assert exchanges[2] == ("(Your last reply got: like; the user ended the conversation.)", "")
    assert [q.query for q in nfcats.questions] == ["Why is the sky blue? (2)"]
    locomo = items["Locomo-0"]
    assert locomo.sessions[0].id == "corpus/session_1"
    assert locomo.sessions[0].exchanges() == [("Ana: My dog is Rex.", "")]
    assert locomo.sessions[1].exchanges() == [("Who is Rex?", "Ana's dog.")]  # dialog_mem0: there is no dialog


async def test_each_dataset_scores_with_its_metric(tmp_path: Path) -> None:
    llm = ScriptedLLM(lambda messages, role, wants_json: "4")
    environment = MemoryBenchEnvironment(EpisodeConfig(), judge=llm, **MEM0)
    values = {}
    for item in environment.load_items(snapshot(tmp_path / "MemoryBench")):
        agent = ReplayRecordingAgent(lambda prompt, memory: "Rex" if "dog" in prompt else "Scattering of light.")
        episode = await environment.run_item(agent, item, None)
        values |= {f"{item.id}/{r.question_index}": (r.value, r.scoring) for r in episode.periods[0].qa}
    assert values["Locomo-0/0"] == (1.0, "token_f1")
    assert values["Locomo-0/1"] == (0.0, "substring_match")  # adversarial: named the adversarial answer
    assert values["NFCats/0"] == (0.75, "llm_judge")  # rating 4 of 1-5
    assert [call["role"] for call in llm.calls] == ["judge"]


def test_a_split_folder_without_data_names_the_folder(tmp_path: Path) -> None:
    root = snapshot(tmp_path / "MemoryBench")
    for file in (root / "dataset" / "NFCats" / "test").iterdir():
        file.unlink()
    with pytest.raises(UserInputError, match="no Arrow or Parquet files") as caught:
        MemoryBenchEnvironment(EpisodeConfig(), **MEM0).load_items(root)
    assert caught.value.source == str(root / "dataset" / "NFCats" / "test")


def test_a_record_without_its_language_names_file_and_field(tmp_path: Path) -> None:
    root = tmp_path / "MemoryBench"
    record = nfcats_record(0)
    del record["lang"]
    for split in ("train", "test"):
        datasets.Dataset.from_list([record]).save_to_disk(str(root / "dataset" / "NFCats" / split))
    with pytest.raises(UserInputError) as caught:
        MemoryBenchEnvironment(EpisodeConfig()).load_items(root)
    assert caught.value.field == "[0].lang" and (caught.value.source or "").endswith(".arrow")


def test_env_stats_reads_the_snapshot(tmp_path: Path) -> None:
    root = snapshot(tmp_path / "MemoryBench")
    result = runner.invoke(app, ["stats", "-e", "memorybench", "--json", "--dialog-field", "dialog_mem0", str(root)])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert figures["items"] == 2 and figures["questions_per_category"] == {"Locomo-0": 2, "NFCats": 1}


async def test_dialsim_reads_its_script_corpus_and_judges_inexact_replies(tmp_path: Path) -> None:
    root = tmp_path / "MemoryBench"
    record = nfcats_record(0) | {"dataset_name": "DialSim-friends", "input_prompt": "Who said hello?",
                                 "info": json.dumps({"golden_answer": "Rachel"})}
    for split, index in (("train", 0), ("test", 1)):
        datasets.Dataset.from_list([record | {"test_idx": index}]).save_to_disk(
            str(root / "dataset" / "DialSim-friends" / split))
    script = ("[Date: March 3, 1995, Session #1]\n\nRoss: Hi.\nRachel: Hello.\n\n"
              "[Date: the next day, Session #2]\n\nJoey: How you doin?\n")
    (root / "corpus").mkdir()
    (root / "corpus" / "DialSim-friends.jsonl").write_text(json.dumps({"text": script}) + "\n", encoding="utf-8")
    llm = ScriptedLLM(lambda messages, role, wants_json: "yes")
    environment = MemoryBenchEnvironment(EpisodeConfig(), judge=llm)
    (item,) = environment.load_items(root)
    first, second = item.sessions[:2]
    assert first.exchanges() == [("Ross: Hi.", "Rachel: Hello.")] and (first.time.year, first.time.month) == (1995, 3)
    assert second.exchanges() == [("Joey: How you doin?", "")] and (second.time - first.time).days == 1
    view = environment.questions(item, 0)[0]
    exact = await environment.score_answer(item, 0, view, "rachel.")
    judged = await environment.score_answer(item, 0, view, "It was Rachel Green")
    assert (exact.score, exact.method) == (1.0, "exact_match") and (judged.score, judged.method) == (1.0, "llm_judge")
    assert len(llm.calls_for("judge")) == 1


def test_the_dialog_field_chooses_a_baselines_dialogs_and_other_datasets_keep_their_own(tmp_path: Path) -> None:
    environment = MemoryBenchEnvironment(EpisodeConfig(), dialog_field="dialog_a_mem")
    items = {item.id: item for item in environment.load_items(snapshot(tmp_path / "MemoryBench"))}
    assert items["Locomo-0"].sessions[1].exchanges() == [("Is Rex a cat?", "No, a dog."),
                                                        ("(Your last reply got: like.)", "")]
    assert items["NFCats"].sessions[0].exchanges()[0] == ("Why is the sky blue? (0)", "Because of scattering.")


def test_a_dataset_without_the_dialog_field_names_file_and_field_and_lists_those_it_has(tmp_path: Path) -> None:
    root = snapshot(tmp_path / "MemoryBench")
    with pytest.raises(UserInputError, match="dialog fields: dialog_a_mem, dialog_mem0") as caught:
        MemoryBenchEnvironment(EpisodeConfig()).load_items(root)
    assert caught.value.field == "dialog" and "Locomo-0/train" in (caught.value.source or "")
    result = runner.invoke(app, ["validate", "-e", "memorybench", str(root)])
    assert result.exit_code != 0 and isinstance(result.exception, UserInputError)


def test_records_without_a_training_dialog_are_said_by_validate_and_stats(tmp_path: Path) -> None:
    root = tmp_path / "MemoryBench"
    for split, records in (("train", [nfcats_record(0), nfcats_record(1, with_dialog=False)]),
                           ("test", [nfcats_record(2)])):
        datasets.Dataset.from_list(records).save_to_disk(str(root / "dataset" / "NFCats" / split))
    said = "dataset NFCats: 1 of 2 training records have no dialog under 'dialog'"
    validated = runner.invoke(app, ["validate", "-e", "memorybench", str(root)])
    assert validated.exit_code == 0 and said in validated.output and "1 warnings" in validated.output
    stats = runner.invoke(app, ["stats", "-e", "memorybench", "--json", str(root)])
    assert stats.exit_code == 0 and said in stats.stderr and json.loads(stats.stdout)["items"] == 1


def test_dialog_field_is_refused_for_other_environments(tmp_path: Path) -> None:
    result = runner.invoke(app, ["stats", "-e", "locomo", "--dialog-field", "dialog_mem0", str(tmp_path)])
    assert isinstance(result.exception, UserInputError) and result.exception.field == "--dialog-field"


@pytest.mark.parametrize(("reply", "credit"), [("a", 1.0), ("(a)", 1.0), ("A", 1.0), ("b", 0.0), ("(b)", 0.0),
                                               ("x", 0.0), ("Not mentioned in the conversation", 1.0),
                                               ("(a) Rex", 0.0)])
async def test_an_adversarial_reply_naming_an_option_by_letter_counts_as_that_option(tmp_path: Path, reply: str,
                                                                                    credit: float) -> None:
    environment = MemoryBenchEnvironment(EpisodeConfig(), **MEM0)
    item = {item.id: item for item in environment.load_items(snapshot(tmp_path / "MemoryBench"))}["Locomo-0"]
    view = environment.questions(item, 0)[1]
    assert (await environment.score_answer(item, 0, view, reply)).score == credit
