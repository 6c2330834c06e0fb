"""The memory-systems benchmark's LoCoMo subset: the first sessions and only the questions answerable from them."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.memory_systems import arm_configs, evidence_sessions, locomo_subset
from memevo.environments.benchmarks.locomo import LoCoMoEnvironment
from memevo.environments.runner import EpisodeConfig


def turn(session: int, number: int, speaker: str) -> dict[str, str]:
    return {"speaker": speaker, "dia_id": f"D{session}:{number}", "text": f"line {number} of session {session}"}


def write_sample(path: Path) -> Path:
    conversation: dict[str, object] = {"speaker_a": "Ann", "speaker_b": "Bo"}
    for session in (1, 2, 3):
        conversation[f"session_{session}_date_time"] = f"1:00 pm on {session} May, 2023"
        conversation[f"session_{session}"] = [turn(session, 1, "Ann"), turn(session, 2, "Bo")]
    qa = [
        {"question": "first?", "answer": "a", "evidence": ["D1:1"], "category": 4},
        {"question": "both?", "answer": "b", "evidence": ["D1:2 D2:1"], "category": 1},
        {"question": "later?", "answer": "c", "evidence": ["D1:1", "D3:2"], "category": 4},
        {"question": "odd?", "answer": "d", "evidence": ["D:2:1"], "category": 2},
        {"question": "unknown?", "answer": "e", "evidence": ["D"], "category": 4},
        {"question": "none?", "answer": "f", "evidence": [], "category": 4},
    ]
    path.write_text(json.dumps([{"sample_id": "conv-x", "conversation": conversation, "qa": qa}]), encoding="utf-8")
    return path


def test_evidence_names_its_sessions_or_nothing():
    assert evidence_sessions({"evidence": ["D8:6; D9:17", "D1:2"]}) == {1, 8, 9}
    assert evidence_sessions({"evidence": ["D:11:26"]}) == {11}
    assert evidence_sessions({"evidence": ["D1:2", "D"]}) == set()  # one unreadable reference: not answerable here
    assert evidence_sessions({}) == set()


def test_the_subset_keeps_the_first_sessions_and_the_questions_they_answer(tmp_path):
    path, asked = locomo_subset(write_sample(tmp_path / "locomo10.json"), 0, 2, tmp_path)
    (sample,) = json.loads(path.read_text(encoding="utf-8"))
    assert [q["question"] for q in sample["qa"]] == ["first?", "both?", "odd?"] and asked == 3
    assert "session_3" not in sample["conversation"] and "session_3_date_time" not in sample["conversation"]
    (item,) = LoCoMoEnvironment(EpisodeConfig()).load_items(str(path))  # LoCoMo's reader takes it
    assert len(item.sessions) == 2 and len(item.questions) == 3


def test_the_arms_are_every_kind_of_the_committed_config():
    kinds = {name: config.seed.policy.kind for name, config in arm_configs(None).items()}
    assert set(kinds.values()) == {"native", "rag", "awi", "awe", "amem", "mem0"} and len(kinds) == 9
