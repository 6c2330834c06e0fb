"""``memevo env generate``: the LLM pipeline from personas to a validated ``data.json``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from memevo.agents.llm.accounting import dollars_text
from memevo.agents.llm.protocol import ChatClient
from memevo.core.atomic_files import write_json_atomic
from memevo.core.errors import RunFailedError
from memevo.environments.amemgym.data.validate import has_errors, validate_items
from memevo.environments.amemgym.generation.config import (
    GenerationConfig,
    load_generation_config,
    parse_generation_config,
)

if TYPE_CHECKING:
    from memevo.environments.amemgym.generation.pipeline import GenerationResult, UserFailure


def resolve_config(config_path: Path | None, overrides: dict[str, Any], llm_overrides: dict[str, Any]) -> GenerationConfig:
    """The config file (or defaults) with the command-line flags that were given laid on top."""
    base = load_generation_config(config_path) if config_path else GenerationConfig()
    raw = base.model_dump() | {key: value for key, value in overrides.items() if value is not None}
    raw["llm"] = base.llm.model_dump() | {key: value for key, value in llm_overrides.items() if value is not None}
    return parse_generation_config(raw, source=str(config_path) if config_path else "command line")


async def generate_dataset(
    llm: ChatClient, config: GenerationConfig, out_dir: Path, *, reuse: bool = True, skip_failed: bool = False
) -> GenerationResult:
    """Run the pipeline and write ``<out_dir>/data.json``.

    Raises ``RunFailedError`` naming every failed user and stage unless ``skip_failed`` (then the file
    holds the users that succeeded and ``failures.json`` lists the rest); nothing is written when the
    items do not pass ``validate_items``.
    """
    def report(uuid: str, failure: UserFailure | None) -> None:
        typer.echo(f"user {uuid}: " + (f"FAILED at stage {failure.stage}: {failure.error}" if failure else "ok"), err=True)

    from memevo.environments.amemgym.generation.pipeline import run_generation  # pandas: only when generating

    result = await run_generation(llm, config, out_dir, reuse=reuse, on_user_done=report)
    failed = "; ".join(f"user {f.uuid} failed at stage '{f.stage}': {f.error}" for f in result.failures)
    if result.failures and not skip_failed:
        raise RunFailedError(f"{len(result.failures)} of {config.num_user_profiles} users failed ({failed}); "
                             "rerun to resume, or pass --skip-failed to keep the others")
    if not result.items:
        raise RunFailedError(f"no user was generated ({failed})")
    violations = validate_items(result.items, min_state_variants=config.min_state_variants)
    if has_errors(violations):
        errors = [v.describe() for v in violations if v.severity == "error"]
        raise RunFailedError("generated items break the data invariants: " + "; ".join(errors[:10]))
    for violation in violations:
        typer.echo(violation.describe(), err=True)
    write_json_atomic(out_dir / "data.json", [item.model_dump(mode="json") for item in result.items])
    return result


def generate_command(
    config: Annotated[Path | None, typer.Option("--config", help="YAML/JSON GenerationConfig; flags override it.")] = None,
    users: Annotated[int | None, typer.Option("--users", help="Number of personas (num_user_profiles).")] = None,
    periods: Annotated[int | None, typer.Option("--periods", help="Update periods (num_periods).")] = None,
    questions: Annotated[int | None, typer.Option("--questions", help="Questions per user (num_questions).")] = None,
    personas: Annotated[Path | None, typer.Option("--personas", help="Nemotron-style persona file; default: the shipped sample.")] = None,
    out: Annotated[Path, typer.Option("--out", help="Output directory (data.json, raw/ stage cache).")] = Path("generated"),
    seed: Annotated[int | None, typer.Option("--seed")] = None,
    skip_failed: Annotated[bool, typer.Option("--skip-failed", help="Write the users that succeeded instead of failing.")] = False,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Ignore cached stages and LLM responses.")] = False,
    base_url: Annotated[str | None, typer.Option("--base-url", help="OpenAI-compatible endpoint; default: local model.")] = None,
    model: Annotated[str | None, typer.Option("--model")] = None,
) -> None:
    """Generate an AMemGym-format data.json with an LLM (stages C.0-C.13), resuming cached stages."""
    settings = resolve_config(
        config,
        {"num_user_profiles": users, "num_periods": periods, "num_questions": questions,
         "personas_path": personas, "seed": seed},
        {"base_url": base_url, "model": model},
    )
    asyncio.run(_generate_with_hub(settings, out, reuse=not no_cache, skip_failed=skip_failed))


async def _generate_with_hub(settings: GenerationConfig, out: Path, *, reuse: bool, skip_failed: bool) -> None:
    """One hub for the whole run, closed on the same event loop its clients were opened on."""
    from memevo.agents.llm.hub import LLMHub  # deferred: the hub pulls in DSPy, which `--help` should not pay for

    async with LLMHub(use_cache=reuse) as hub:
        try:
            result = await generate_dataset(hub.client(settings.llm), settings, out, reuse=reuse, skip_failed=skip_failed)
            typer.echo(f"wrote {out / 'data.json'}: {len(result.items)} users, {len(result.failures)} failed")
        finally:
            for role, row in hub.accounting.report().by_role.items():
                typer.echo(f"  {role}: {row.calls} calls ({row.cache_hits} cached), {row.prompt_tokens}+"
                           f"{row.completion_tokens} tokens, {row.wall_s:.1f}s, {dollars_text(row)}, {row.errors} errors")
