"""The quickstart config, reduced in size, run end to end on the real embedded model (SmolLM2-135M).

It checks what a new user sees: the run finishes with seed and best scored on the test user, spend is
counted, MLflow holds the run, and ``memevo report`` re-prints it from disk.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yaml
from mlflow.tracking import MlflowClient

from benchmarks.quickstart_gain import SPLIT_SEEDS, with_split_seed
from memevo.agents.llm.hub import LLMHub
from memevo.agents.prompts.answer import answer_component
from memevo.agents.prompts.awi import WRITE_COMPONENT
from memevo.agents.templates import prompt_problems
from memevo.environments.answering import resolve_answer_mode
from memevo.environments.metrics import compute_upper_bound
from memevo.environments.metrics.baseline import random_baseline
from memevo.environments.metrics.measurable import memory_not_measurable
from memevo.evolve.config import parse_evolve_config
from memevo.evolve.loop import run_evolution
from memevo.evolve.presentation.report import report_run
from memevo.evolve.runtime import load_users, make_split

QUICKSTART = Path(__file__).resolve().parents[2] / "experiments" / "quickstart.yaml"


@pytest.mark.integration
@pytest.mark.timeout(900)
def test_reduced_quickstart_on_the_local_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    data = yaml.safe_load(QUICKSTART.read_text(encoding="utf-8"))
    data["data"]["synth"].update(users=3, periods=0, questions=1)
    data["split"] = {"train": 1, "val": 1, "test": 1, "seed": 0}
    config = parse_evolve_config(data, source=QUICKSTART)
    run_dir = tmp_path / "quickstart"

    with LLMHub(cache_dir=tmp_path / "cache") as hub:
        result = run_evolution(config, run_dir=run_dir, hub=hub, resume=False)
        assert hub.local_server_url is not None, "no endpoint configured: the embedded model must have served"

    assert result.seed_scores.n_users == result.best_scores.n_users == 1
    assert 0.0 <= result.best_scores.accuracy <= 1.0
    assert len(result.history) == 2  # generation 0 (seed) and one evolution generation
    total = result.usage.total()
    assert total.calls > 0 and total.prompt_tokens > 0 and total.cache_hits < total.calls

    ids = json.loads((run_dir / "mlflow_ids.json").read_text())
    client = MlflowClient(tracking_uri=f"sqlite:///{(run_dir / 'mlflow.db').resolve()}")
    parent = client.get_run(ids["parent"]["id"])
    assert parent.info.status == "FINISHED" and "test/best_accuracy" in parent.data.metrics

    text = report_run(run_dir)
    assert "Stopped:" in text and "| total |" in text and "memevo ui --run-dir" in text
    assert (run_dir / "report" / "test_periods.png").exists()


def test_quickstart_config_is_valid_and_answers_by_likelihood_on_the_embedded_model() -> None:
    config = parse_evolve_config(yaml.safe_load(QUICKSTART.read_text(encoding="utf-8")), source=QUICKSTART)
    assert config.episode.answer_mode == "auto"  # likelihood on the embedded model, generated elsewhere
    assert set(config.hyperparameters) == {"short_term"} and config.components == []
    assert config.objective == "accuracy"
    assert config.seed.policy is not None and config.seed.policy.kind == "awi"
    assert len(load_users(config)) == 9


def test_quickstart_searches_from_a_notes_only_seed_in_a_world_the_model_can_read() -> None:
    """The seed keeps no raw messages, the search can add some, the users state their facts in the options' words
    (the 135M model links no paraphrase to an option), and the held-out users ask at least 40 questions (the
    paired test's floor in benchmarks/quickstart_gain.py)."""
    config = parse_evolve_config(yaml.safe_load(QUICKSTART.read_text(encoding="utf-8")), source=QUICKSTART)
    assert config.seed.policy is not None and config.seed.policy.short_term == 0
    assert max(config.hyperparameters["short_term"].choices or [0]) > 0
    assert config.data.synth is not None and config.data.synth["users_name_values"] is True
    items = load_users(config)
    test = make_split(items, config).test
    assert sum(len(item.periods) * len(item.qas) for item in items if item.id in test) >= 40


def test_quickstart_seed_prompts_are_valid_and_much_shorter_than_the_defaults() -> None:
    """The model reads every prompt token at each reply, write and answer: the seed's own prompts keep what the
    agent needs (placeholders, the write's output clause) in well under half the default length."""
    config = parse_evolve_config(yaml.safe_load(QUICKSTART.read_text(encoding="utf-8")), source=QUICKSTART)
    assert config.seed.policy is not None
    prompts = config.seed.policy.prompts
    for spec in (WRITE_COMPONENT, answer_component(in_context=True)):
        assert prompt_problems(spec, prompts[spec.name]) == []
        assert len(prompts[spec.name]) < len(spec.default) / 2, spec.name


@pytest.mark.integration
@pytest.mark.timeout(900)
def test_quickstart_world_upper_bound_is_above_random_on_the_embedded_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The world the quickstart evolves on must let memory show: the embedded model told the true state beats a
    uniform guess by more than its own sampling noise (the memory score's measurability rule)."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    config = parse_evolve_config(yaml.safe_load(QUICKSTART.read_text(encoding="utf-8")), source=QUICKSTART)
    items = load_users(config)
    with LLMHub(cache_dir=tmp_path / "cache") as hub:
        assert config.seed.policy is not None
        llm = hub.client(config.seed.policy.llm)
        assert resolve_answer_mode("auto", llm, amemgym_compat=False) == "likelihood"
        table = asyncio.run(compute_upper_bound(llm, items, answer_mode="likelihood"))
    cells = [(item, period, q) for item in items for period in range(len(item.periods)) for q in range(len(item.qas))]
    upper = sum(table.score(*cell) for cell in cells) / len(cells)
    rand = sum(random_baseline(*cell) for cell in cells) / len(cells)
    assert memory_not_measurable(n_questions=len(cells), upper_bound=upper, random_baseline=rand,
                                 upper_bound_unreadable=0.0) is None, (upper, rand)


def test_the_gain_benchmark_draws_other_test_users_from_the_same_world() -> None:
    """benchmarks/quickstart_gain.py varies only the split seed: the world stays and the held-out users change."""
    config = parse_evolve_config(yaml.safe_load(QUICKSTART.read_text(encoding="utf-8")), source=QUICKSTART)
    items = load_users(config)
    splits = [make_split(items, with_split_seed(config, seed)) for seed in SPLIT_SEEDS]
    assert all(split.seed == seed for split, seed in zip(splits, SPLIT_SEEDS, strict=True))
    assert len({tuple(split.test) for split in splits}) > 1
    assert all(load_users(with_split_seed(config, seed)) == items for seed in SPLIT_SEEDS)
    assert config.split.seed not in SPLIT_SEEDS
