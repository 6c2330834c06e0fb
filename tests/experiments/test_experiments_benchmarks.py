"""The shipped benchmark configs (experiments/benchmarks/): each points at the user's download under one clearly
named folder, configures the judge exactly where its benchmark grades by one, and runs end to end through
``memevo evolve`` on a tiny file in the benchmark's real format against the fake endpoint."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from memevo.evolve.cli import main as cli
from memevo.evolve.config import load_evolve_config
from memevo.evolve.cross_test import read_cross_test
from tests.doubles.benchmark_files import write_locomo, write_longmemeval, write_memoryagentbench, write_memorybench
from tests.doubles.fault_server import FaultServer

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")

BENCHMARKS = Path(__file__).resolve().parents[2] / "experiments" / "benchmarks"
DATA_HOME = "~/memevo-data/"

Writer = Callable[[Path], Path]
TINY: dict[str, Writer] = {
    "locomo": lambda folder: write_locomo(folder, 3, 3, sessions=2),
    "longmemeval": lambda folder: write_longmemeval(folder, 1, 3),
    "memoryagentbench": lambda folder: write_memoryagentbench(folder, 3, 2, facts=20),
    "memorybench": lambda folder: write_memorybench(folder, 3, 2, train=1),
}
"""Three items each (one per split), a handful of questions, sessions of a few turns."""
JUDGED = {"longmemeval", "memoryagentbench", "memorybench"}
"""The benchmarks whose scoring asks an LLM judge (for some of their questions)."""
CONFIGS = {
    "locomo.yaml": ("locomo", None), "longmemeval.yaml": ("longmemeval", None),
    "memoryagentbench.yaml": ("memoryagentbench", None), "memorybench.yaml": ("memorybench", None),
    "locomo-to-longmemeval.yaml": ("locomo", "longmemeval"),
}
FIELD = re.compile(r"\[\[ ## (\w+) ## \]\]\n(.*?)(?=\n\n\[\[ ## |\Z)", re.S)


def test_every_benchmark_config_reads_the_download_and_judges_where_its_benchmark_does() -> None:
    assert {path.name for path in BENCHMARKS.glob("*.yaml")} == set(CONFIGS)
    for name, (environment, test_environment) in CONFIGS.items():
        config = load_evolve_config(BENCHMARKS / name)
        assert config.environment == environment and config.data.path is not None
        assert config.data.path.startswith(DATA_HOME + ("MemoryBench" if environment == "memorybench" else environment))
        judged = {environment, test_environment} & JUDGED
        assert (config.llm.judge is not None) == bool(judged), name
        assert (config.test_environment.environment if config.test_environment else None) == test_environment


def fake_reply(body: dict[str, Any]) -> str:
    """The endpoint's replies: a judge says yes (or 3 of 5); the proposer adds a line to the text it is shown;
    a note write stores one fact; an answer names Lisbon."""
    messages = body["messages"]
    prompt = messages[-1]["content"]
    if any("[[ ## " in message["content"] for message in messages):
        fields = dict(FIELD.findall(prompt))
        types = "new_types" in messages[0]["content"]
        current = fields.get("current_types" if types else "current_text", "").strip()
        return (f"[[ ## {'new_types' if types else 'new_text'} ## ]]\n{current}\n- where people moved, and when\n\n"
                "[[ ## changes ## ]]\n[\"added moves\"]\n\n[[ ## completed ## ]]")
    if "yes or no" in prompt:
        return "yes"
    if "Reply with the number only" in prompt:
        return "3"
    if "response_format" in body:
        return json.dumps({"move": "moved to Lisbon in May"})
    return "Lisbon, in May."


def tiny_copy(name: str, folder: Path) -> Path:
    """The shipped config with its data paths on tiny files, one item per split, one generation of one candidate,
    no MLflow (what is tested is the config's own settings)."""
    data = yaml.safe_load((BENCHMARKS / name).read_text(encoding="utf-8"))
    environment, test_environment = CONFIGS[name]
    data["data"]["path"] = str(TINY[environment](folder / "train"))
    if test_environment is not None:
        data["test_environment"]["data"]["path"] = str(TINY[test_environment](folder / "held-out"))
    data.update(split={"train": 1, "val": 1, "test": 1, "seed": 0}, budget={"generations": 1, "candidates": 1},
                tracking={"enabled": False})
    path = folder / name
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_the_config_evolves_end_to_end_on_a_tiny_file_in_the_real_format(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    for folder in ("train", "held-out"):
        (tmp_path / folder).mkdir()
    config = tiny_copy(name, tmp_path)
    monkeypatch.setenv("MEMEVO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    run_dir = tmp_path / "run"
    with FaultServer(fake_reply) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setattr(sys, "argv", ["memevo", "evolve", str(config), "--run-dir", str(run_dir)])
        with pytest.raises(SystemExit) as exited:
            cli.main()
    printed = capsys.readouterr()
    assert exited.value.code in (0, None), printed.err
    environment, test_environment = CONFIGS[name]
    assert f"memory score: not measured on {environment}" in printed.out
    assert re.search(r"  score \((F1|judge|[^)]+)\): seed", printed.out) and "accuracy: seed" not in printed.out, \
        "free-text answers: a mean score, named by how it is scored"
    assert "upper bound n/a" not in printed.out and "references: random" not in printed.out, "AMemGym's only"
    result = json.loads((run_dir / "result.json").read_text(encoding="utf-8"))
    assert result["environment"] == environment and result["best_scores"]["n_users"] == 1
    assert result["seed_scores"]["per_category"], "every benchmark reports per category"
    assert len(list((run_dir / "evals").iterdir())) == 2, "the seed and the one proposal were both evaluated"
    roles = result["usage"]["by_role"]
    assert roles["agent"]["calls"] > 0 and roles["proposer"]["calls"] > 0
    assert ("judge" in roles and roles["judge"]["calls"] > 0) == bool({environment, test_environment} & JUDGED)
    models = {request["model"] for request in server.requests}
    assert "gpt-4.1-mini" in models and ("gpt-4o" in models) == bool({environment, test_environment} & JUDGED)
    cross = read_cross_test(run_dir)
    assert (cross.environment if cross else None) == test_environment
