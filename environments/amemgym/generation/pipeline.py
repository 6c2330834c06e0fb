"""Runs stages C.0-C.13 for every sampled persona, resuming from the per-user stage cache.

A user whose stage gives up is recorded with the stage and the error (``UserFailure``) and never
silently dropped; whether that fails the run is the caller's decision (``--skip-failed``).
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast

from pydantic import ValidationError

from memevo.agents.llm.protocol import ChatClient, LLMError
from memevo.core.atomic_files import write_json_atomic
from memevo.core.errors import UserInputError
from memevo.core.lazy_model import LazyModel
from memevo.environments.amemgym.data.models import Item
from memevo.environments.amemgym.data.validate import has_errors, validate_items
from memevo.environments.amemgym.generation.answers import answer_variants, personalized_answers, question_record
from memevo.environments.amemgym.generation.ask import StageError
from memevo.environments.amemgym.generation.cache import StageCache
from memevo.environments.amemgym.generation.config import GenerationConfig
from memevo.environments.amemgym.generation.convert import build_item
from memevo.environments.amemgym.generation.evolution import elaborate_events, initial_state, state_update
from memevo.environments.amemgym.generation.personas import Persona, format_profile, sample_personas
from memevo.environments.amemgym.generation.queries import initial_queries, update_queries
from memevo.environments.amemgym.generation.schema import refine_schema, sample_questions
from memevo.environments.amemgym.generation.timing import period_bounds

RUNTIME_ONLY: dict[str, Any] = {
    "max_concurrent_users": True,
    "llm": {"timeout_s", "max_retries", "max_concurrency", "api_key_env"},
}


class UserFailure(LazyModel):
    uuid: str
    stage: str
    error: str


class GenerationResult(LazyModel):
    items: list[Item]
    failures: list[UserFailure]


async def _stage(cache: StageCache, stage: str, run: Callable[[], Awaitable[Any]]) -> Any:
    """One cached stage; an LLM that stays unreachable fails the stage under its own name."""
    try:
        return await cache.get_or_run(stage, run)
    except LLMError as exc:
        raise StageError(stage, f"LLM call failed: {exc}") from exc


async def generate_user(llm: ChatClient, persona: Persona, config: GenerationConfig, cache: StageCache) -> Item:
    """All stages for one persona; each finished stage is on disk before the next starts."""
    profile = await _stage(cache, "user_profile", lambda: format_profile(llm, persona, config))
    questions = await _stage(cache, "questions", lambda: sample_questions(llm, profile, config))
    refined = await _stage(cache, "schema", lambda: refine_schema(llm, questions, config))
    schema: dict[str, list[str]] = refined["state_schema"]
    states = [await _stage(cache, "initial_state", lambda: initial_state(llm, profile, schema, config))]
    records: list[dict[str, Any] | None] = [None]
    all_events: list[list[dict[str, Any]]] = [[]]
    counts = dict.fromkeys(schema, 0)
    for step in range(1, config.num_periods + 1):
        bounds = period_bounds(config.start_date, step, config.num_months_per_period)
        history = [record for record in records if record]
        record = await _stage(cache, f"state_update_p{step:02d}", lambda: state_update(
            llm, profile, schema, states[-1], history, counts, bounds, step, config))
        records.append(record)
        states.append(states[-1] | record["updated"])
        counts = {name: counts[name] + (name in record["updated"]) for name in schema}
        all_events.append(await _stage(cache, f"events_p{step:02d}",
                                       lambda: elaborate_events(llm, profile, record, step, config)))
    qas = []
    for index, question in enumerate(refined["questions"]):
        rng = random.Random(f"{config.seed}:{persona.uuid}:variants:{index}")
        variants = answer_variants(question["required_info"], states, schema, config.min_state_variants, rng)
        stage = f"answers_q{index:02d}"
        answers = await _stage(cache, stage, lambda: personalized_answers(llm, profile, question, variants, config, stage))
        qas.append(question_record(question, answers))
    sessions = [await _stage(cache, "queries_p00", lambda: initial_queries(llm, profile, schema, states[0], config))]
    for step in range(1, config.num_periods + 1):
        sessions.append(await _stage(cache, f"queries_p{step:02d}", lambda: update_queries(
            llm, profile, schema, states[step - 1], cast(dict[str, Any], records[step]), all_events[step], step, config)))
    try:
        item = build_item(profile, config.start_date, schema, states, records, sessions, qas,
                          random.Random(f"{config.seed}:{persona.uuid}:sessions"))
    except ValidationError as exc:
        raise StageError("convert", str(exc)) from exc
    violations = validate_items([item], min_state_variants=config.min_state_variants)
    if has_errors(violations):
        errors = [v.describe() for v in violations if v.severity == "error"]
        raise StageError("validate", "; ".join(errors[:5]))
    cache.save("item", item.model_dump(mode="json"))
    return item


def _check_run_dir(out_dir: Path, config: GenerationConfig, reuse: bool) -> None:
    """Refuse to resume stage files made under settings that shape their content (not timeouts or concurrency)."""
    path = out_dir / "raw" / "config.json"
    current = config.model_dump(mode="json", exclude=RUNTIME_ONLY)
    if reuse and path.exists():
        previous = json.loads(path.read_text(encoding="utf-8"))
        changed = sorted(key for key in current.keys() | previous.keys() if current.get(key) != previous.get(key))
        if changed:
            raise UserInputError(
                f"settings differ from the cached run ({', '.join(changed)}); use a new --out or --no-cache",
                source=str(path), field=changed[0],
            )
    write_json_atomic(path, current)


async def run_generation(
    llm: ChatClient, config: GenerationConfig, out_dir: Path, *, reuse: bool = True,
    on_user_done: Callable[[str, UserFailure | None], None] | None = None,
) -> GenerationResult:
    """Generate every sampled user, bounded by ``max_concurrent_users``; failures are collected, not dropped."""
    _check_run_dir(out_dir, config, reuse)
    personas = sample_personas(config)
    write_json_atomic(out_dir / "raw" / "user_profiles.json", [persona.model_dump() for persona in personas])
    limit = asyncio.Semaphore(config.max_concurrent_users)

    async def one(persona: Persona) -> Item | UserFailure:
        async with limit:
            cache = StageCache(out_dir / "raw" / persona.uuid, reuse=reuse)
            try:
                outcome: Item | UserFailure = await generate_user(llm, persona, config, cache)
            except StageError as exc:
                outcome = UserFailure(uuid=persona.uuid, stage=exc.stage, error=exc.detail)
            if on_user_done:
                on_user_done(persona.uuid, outcome if isinstance(outcome, UserFailure) else None)
            return outcome

    outcomes = await asyncio.gather(*(one(persona) for persona in personas))
    failures = [outcome for outcome in outcomes if isinstance(outcome, UserFailure)]
    write_json_atomic(out_dir / "failures.json", [failure.model_dump() for failure in failures])
    return GenerationResult(items=[o for o in outcomes if isinstance(o, Item)], failures=failures)
