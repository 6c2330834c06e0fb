"""The LLM generation pipeline end to end with a scripted generator double (no real model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memevo.core.errors import RunFailedError
from memevo.environments.amemgym.data.models import Item
from memevo.environments.amemgym.data.validate import has_errors, validate_items
from memevo.environments.amemgym.generation.command import generate_dataset
from memevo.environments.amemgym.generation.config import GenerationConfig
from tests.doubles.scripted_generator import ScriptedGenerator
from tests.doubles.scripted_llm import ScriptedLLM

SMALL = dict(num_user_profiles=2, num_questions=3, num_periods=2, num_changes_per_period=2,
             max_changes_per_state=2, check_retries=2, repair_turns=2)


def config(**changes: object) -> GenerationConfig:
    return GenerationConfig.model_validate(SMALL | changes)


async def test_full_run_writes_valid_items(tmp_path: Path) -> None:
    llm = ScriptedLLM(ScriptedGenerator())
    result = await generate_dataset(llm, config(), tmp_path)
    items = [Item.model_validate(raw) for raw in json.loads((tmp_path / "data.json").read_text())]
    assert len(items) == 2 and not result.failures
    assert not has_errors(validate_items(items))
    item = items[0]
    assert len(item.periods) == 3 and len(item.qas) == 3
    # C.4 merged the shared variable's two value lists into one set of exactly 3 values.
    assert all(len(values) == 3 for values in item.state_schema.values())
    assert all(len(q.answer_choices) >= 4 for q in item.qas)
    assert item.periods[0].sessions[0].session_time.startswith("2020-")
    assert {c["role"] for c in llm.calls} == {"generator", "judge"}


async def test_answer_choice_order_is_reproducible(tmp_path: Path) -> None:
    await generate_dataset(ScriptedLLM(ScriptedGenerator()), config(), tmp_path / "a", reuse=False)
    await generate_dataset(ScriptedLLM(ScriptedGenerator()), config(), tmp_path / "b", reuse=False)
    assert (tmp_path / "a" / "data.json").read_bytes() == (tmp_path / "b" / "data.json").read_bytes()


async def test_rerun_resumes_without_calls_for_finished_stages(tmp_path: Path) -> None:
    await generate_dataset(ScriptedLLM(ScriptedGenerator()), config(), tmp_path)
    again = ScriptedLLM(ScriptedGenerator())
    await generate_dataset(again, config(), tmp_path)
    assert again.calls == []
    user_dir = next(p for p in (tmp_path / "raw").iterdir() if p.is_dir())
    (user_dir / "item.json").unlink()
    (user_dir / "queries_p02.json").unlink()
    partial = ScriptedLLM(ScriptedGenerator())
    await generate_dataset(partial, config(), tmp_path)
    prompts = [call["messages"][1]["content"] for call in partial.calls]
    assert prompts and all("This changed:" in p or p.startswith("Message:") for p in prompts)


async def test_failed_user_names_user_and_stage(tmp_path: Path) -> None:
    llm = ScriptedLLM(ScriptedGenerator(fail_user="Dale Whitaker"))
    settings = config(num_user_profiles=8, num_questions=2, num_periods=1)
    with pytest.raises(RunFailedError) as failure:
        await generate_dataset(llm, settings, tmp_path)
    message = str(failure.value)
    assert "a91d7c44-2f35-4b8e-b6a0-5c3e9d1f7a02" in message and "events_p01" in message
    assert not (tmp_path / "data.json").exists()
    assert json.loads((tmp_path / "failures.json").read_text())[0]["stage"] == "events_p01"

    result = await generate_dataset(llm, settings, tmp_path, skip_failed=True)
    assert len(result.items) == 7 and [f.stage for f in result.failures] == ["events_p01"]
    assert len(json.loads((tmp_path / "data.json").read_text())) == 7


async def test_leaking_query_is_rewritten(tmp_path: Path) -> None:
    llm = ScriptedLLM(ScriptedGenerator(leak_first_query=True))
    result = await generate_dataset(llm, config(num_user_profiles=1), tmp_path)
    first = result.items[0].periods[0].sessions[0]
    rewrites = [c for c in llm.calls if c["messages"][1]["content"].startswith("Message:\n")
                and "It should let" in c["messages"][1]["content"]]
    assert len(rewrites) == 1 and "must not mention" in rewrites[0]["messages"][1]["content"]
    others = {name for name in result.items[0].state_schema if name not in first.exposed_states}
    assert not any(f"{name}=" in first.query for name in others)


def test_config_flags_override_file(tmp_path: Path) -> None:
    from memevo.core.errors import UserInputError
    from memevo.environments.amemgym.generation.command import resolve_config

    path = tmp_path / "gen.yaml"
    path.write_text("num_questions: 4\nseed: 7\nllm: {model: m1}\n")
    settings = resolve_config(path, {"seed": 9, "num_periods": None}, {"model": None, "base_url": "http://x/v1"})
    assert (settings.num_questions, settings.seed, settings.llm.model, settings.llm.base_url) == (4, 9, "m1", "http://x/v1")
    path.write_text("num_questions: zero\n")
    with pytest.raises(UserInputError, match="num_questions"):
        resolve_config(path, {}, {})


async def test_changed_settings_refuse_stale_cache(tmp_path: Path) -> None:
    from memevo.core.errors import UserInputError

    await generate_dataset(ScriptedLLM(ScriptedGenerator()), config(num_user_profiles=1), tmp_path)
    with pytest.raises(UserInputError, match="num_questions"):
        await generate_dataset(ScriptedLLM(ScriptedGenerator()), config(num_user_profiles=1, num_questions=2), tmp_path)


class _FakeHub:
    """TEST DOUBLE for LLMHub: hands out one scripted client and an empty usage report."""

    handler: ScriptedGenerator

    def __init__(self, use_cache: bool = True) -> None:
        from memevo.agents.llm.accounting import Accounting

        self.accounting = Accounting()

    async def __aenter__(self) -> "_FakeHub":
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    def client(self, config: object) -> ScriptedLLM:
        return ScriptedLLM(self.handler)


def test_command_exit_codes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import typer
    from typer.testing import CliRunner

    from memevo.agents.llm import hub
    from memevo.environments.amemgym.generation.command import generate_command

    monkeypatch.setattr(hub, "LLMHub", _FakeHub)
    app = typer.Typer()
    app.command("generate")(generate_command)
    app.command("noop")(lambda: None)
    args = ["generate", "--users", "3", "--periods", "1", "--questions", "2", "--out", str(tmp_path)]
    _FakeHub.handler = ScriptedGenerator(fail_user="Dale Whitaker")
    failed = CliRunner().invoke(app, args)
    assert failed.exit_code != 0 and isinstance(failed.exception, RunFailedError)
    assert "a91d7c44-2f35-4b8e-b6a0-5c3e9d1f7a02" in str(failed.exception)
    skipped = CliRunner().invoke(app, [*args, "--skip-failed"])
    assert skipped.exit_code == 0, skipped.output
    assert "2 users, 1 failed" in skipped.output
    assert len(json.loads((tmp_path / "data.json").read_text())) == 2
