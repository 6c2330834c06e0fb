"""Every shipped experiment config validates against the real schemas, carries a note, and is documented."""

from __future__ import annotations

from pathlib import Path

import pytest

from memevo.agents.llm.config import LOCAL_MODEL_NAME
from memevo.environments.amemgym.synth import SynthConfig
from memevo.evolve import runtime
from memevo.evolve.ablation.config import is_ablation_file, load_ablation_config, resolve_all
from memevo.evolve.config import load_evolve_config

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"
CONFIGS = sorted(EXPERIMENTS.rglob("*.yaml"))


def test_the_documented_experiments_exist() -> None:
    names = {path.relative_to(EXPERIMENTS).as_posix() for path in CONFIGS}
    assert {
        "quickstart.yaml", "feedback-ablation.yaml", "sweep-awe.yaml", "sweep-rag.yaml",
        "amemgym/no-evolution.yaml", "amemgym/question-only.yaml", "amemgym/complete.yaml", "amemgym/ablation.yaml",
        "outer-loop/no-evolution.yaml", "outer-loop/question-only.yaml", "outer-loop/complete.yaml",
        "benchmarks/locomo.yaml", "benchmarks/longmemeval.yaml", "benchmarks/memoryagentbench.yaml",
        "benchmarks/memorybench.yaml", "benchmarks/locomo-to-longmemeval.yaml",
    } <= names


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.relative_to(EXPERIMENTS).as_posix())
def test_config_validates_and_has_a_note(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("#"), "every experiment starts with a comment header saying what it is"
    assert "Cost" in text or "Time" in text, "the note says what it costs"
    assert path.relative_to(EXPERIMENTS).as_posix() in (EXPERIMENTS / "README.md").read_text(encoding="utf-8")
    if is_ablation_file(path):
        resolved = resolve_all(load_ablation_config(path))
        configs = list(resolved.values())
    else:
        configs = [load_evolve_config(path)]
    for config in configs:
        runtime.seed_policy(config)  # components and hyperparameters exist for the agent kind
        if config.data.synth is not None:
            SynthConfig.model_validate(config.data.synth)


def test_amemgym_protocol_configs_match_the_released_settings() -> None:
    for name, mode, components in (("no-evolution", "none", []), ("question-only", "question_only", ["memory_types"]),
                                   ("complete", "complete", ["memory_types"])):
        config = load_evolve_config(EXPERIMENTS / "amemgym" / f"{name}.yaml")
        policy = runtime.seed_policy(config)
        assert config.protocol == "amemgym_period" and config.episode.diagnose
        assert (policy.kind, policy.update_every, policy.short_term) == ("awi", 2, 4)
        assert policy.llm.model == "gpt-4.1-mini" and policy.llm.temperature == 0.0
        assert policy.amemgym_compat and runtime.episode_config(config, policy).amemgym_compat
        assert not runtime.episode_config(config, policy).constrained_answers  # free decoding, as AMemGym
        assert config.llm.simulator is not None and config.llm.simulator.model == "gpt-4.1"
        assert config.feedback.mode.value == mode and config.components == components
    complete = load_evolve_config(EXPERIMENTS / "amemgym" / "complete.yaml")
    assert complete.feedback.amemgym_letter_bug and not complete.feedback.with_ground_truth


def test_quickstart_needs_no_endpoint() -> None:
    config = load_evolve_config(EXPERIMENTS / "quickstart.yaml")
    policy = runtime.seed_policy(config)
    models = [policy.llm, config.llm.proposer, *(c for c in (config.llm.agent, config.llm.simulator) if c)]
    assert all(llm.model == LOCAL_MODEL_NAME and llm.base_url is None for llm in models)
    assert config.episode.simulator == "template"
    assert (policy.kind, config.components, config.feedback.mode.value) == ("awi", [], "none")
    assert config.data.synth is not None and config.tracking.enabled
