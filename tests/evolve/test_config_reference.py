"""The config reference matches the models, its schemas accept what memevo accepts, and every example loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from memevo.agents.config_file import load_policy
from memevo.environments.amemgym.generation.config import load_generation_config
from memevo.evolve.ablation.config import load_ablation_config, resolve_all
from memevo.evolve.cli.config_examples import EXAMPLES
from memevo.evolve.cli.config_reference import KINDS, REGENERATE, model_of, reference_markdown
from memevo.evolve.cli.main import app
from memevo.evolve.config import load_evolve_config

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "experiments" / "REFERENCE.md"


@pytest.fixture(autouse=True)
def _no_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    """A config without a model takes $MEMEVO_MODEL: no endpoint is asked which model it serves."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("MEMEVO_MODEL", "test-model")


def test_the_reference_page_is_generated_from_the_current_models() -> None:
    assert PAGE.read_text(encoding="utf-8") == reference_markdown(), (
        f"{PAGE.relative_to(ROOT)} is stale: regenerate it with `{REGENERATE}`")


def test_the_page_lists_every_field_a_file_may_set() -> None:
    page = reference_markdown()
    for kind in KINDS:
        model = model_of(kind)
        for name, field in model.model_fields.items():
            assert (f"| `{name}` |" in page) is not field.exclude, (kind, name)


def _command(*args: str) -> str:
    result = CliRunner().invoke(app, ["config", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_every_example_loads_and_its_schema_accepts_it(tmp_path: Path) -> None:
    from jsonschema import Draft202012Validator

    files = {kind: tmp_path / f"{kind}.yaml" for kind in EXAMPLES}
    files["evolve"] = tmp_path / "evolution.yaml"  # the name the ablation example's base refers to
    for kind, path in files.items():
        path.write_text(_command("example", kind), encoding="utf-8")
        Draft202012Validator(json.loads(_command("schema", kind))).validate(yaml.safe_load(path.read_text()))
    evolution = load_evolve_config(files["evolve"])
    assert evolution.data.synth is not None and evolution.budget.generations > 0
    ablation = load_ablation_config(files["ablate"])
    assert len(resolve_all(ablation)) == len(ablation.arms) * len(ablation.seeds)
    assert load_policy(files["agent"]).kind == "awi"
    assert load_generation_config(files["env"]).num_user_profiles == 4


def test_the_data_schema_accepts_amemgyms_items_and_refuses_an_unknown_field() -> None:
    from jsonschema import Draft202012Validator, ValidationError

    validator = Draft202012Validator(json.loads(_command("schema", "data")))
    items = json.loads((ROOT / "tests" / "fixtures" / "amemgym_small.json").read_text(encoding="utf-8"))
    for item in items:
        validator.validate(item)
    with pytest.raises(ValidationError, match="nickname"):
        validator.validate({**items[0], "nickname": "x"})


def test_an_unknown_kind_is_a_usage_error() -> None:
    result = CliRunner().invoke(app, ["config", "example", "evolution"])
    assert result.exit_code == 2 and "'evolution' is not one of" in result.output
