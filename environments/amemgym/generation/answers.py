"""Stages C.8 (answer variants) and C.9 (personalised answers with a reflection check).

Variant order is reproducible across processes: visited tuples in order of first appearance, padding
drawn from the sorted unvisited tuples with a seeded ``random.Random``, then a seeded shuffle so the
gold choice's position carries no signal (the reference took the order of a ``set``, I.24).
"""

from __future__ import annotations

import itertools
import random
from typing import Any

from memevo.agents.llm.protocol import ChatClient
from memevo.environments.amemgym.generation.ask import (
    StageError,
    ask_json,
    object_schema,
    prompt,
    string_schema,
    text_field,
)
from memevo.environments.amemgym.generation.config import GenerationConfig

TEXT_SCHEMA, TEXT_VALID = text_field("answer")


def answer_variants(
    required: list[str], states: list[dict[str, str]], schema: dict[str, list[str]], minimum: int, rng: random.Random
) -> list[dict[str, Any]]:
    """C.8: every visited value tuple plus random unvisited ones up to ``minimum``, in a seeded order."""
    visited = list(dict.fromkeys(tuple(state[name] for name in required) for state in states))
    unvisited = [combo for combo in itertools.product(*(schema[name] for name in required)) if combo not in visited]
    padding = rng.sample(unvisited, min(max(minimum - len(visited), 0), len(unvisited)))
    variants = [{"state": list(combo), "type": "experience"} for combo in visited]
    variants += [{"state": list(combo), "type": "random"} for combo in padding]
    rng.shuffle(variants)
    return variants


def _describe(required: list[str], variants: list[dict[str, Any]]) -> str:
    return "\n".join(
        f"variant_{index}: " + ", ".join(f"{name} = {value}" for name, value in zip(required, variant["state"]))
        for index, variant in enumerate(variants, start=1)
    )


async def personalized_answers(
    llm: ChatClient, profile: dict[str, Any], question: dict[str, Any], variants: list[dict[str, Any]],
    config: GenerationConfig, stage: str,
) -> list[dict[str, Any]]:
    """C.9: one short answer per variant, each checked by a judge that must recover its variant."""
    keys = [f"variant_{index}" for index in range(1, len(variants) + 1)]
    required = question["required_info"]

    def problems(parsed: Any) -> list[str]:
        if not isinstance(parsed, dict):
            return [f"reply must be an object with keys {keys}"]
        issues = [f"{key} must be a non-empty answer" for key in keys
                  if not isinstance(parsed.get(key), str) or not parsed[key].strip()]
        if not issues and len({parsed[key].strip() for key in keys}) != len(keys):
            issues.append("every variant needs its own, different answer")
        return issues

    messages = prompt(
        "You write personalised advice. Reply with JSON.",
        (
            f"User profile:\n{profile['formatted_str']}\n\nQuestion: {question['question']}\n\n"
            f"The best advice depends on the user's situation. Possible situations:\n{_describe(required, variants)}\n\n"
            "For each situation write 2-3 sentences of advice that clearly fit that situation and no other, "
            "without quoting the situation's values word for word. Return {"
            + ", ".join(f'"{key}": str' for key in keys) + "}."
        ),
    )
    parsed = await ask_json(
        llm, messages, stage=stage, schema=object_schema({key: string_schema() for key in keys}),
        validate=problems, temperature=config.low_temperature, repair_turns=config.repair_turns,
    )
    answers = []
    for index, (key, variant) in enumerate(zip(keys, variants), start=1):
        answer = await _checked_answer(llm, question, variants, index, parsed[key].strip(), config, stage)
        answers.append({"state": variant["state"], "answer": answer, "type": variant["type"]})
    return answers


async def _checked_answer(
    llm: ChatClient, question: dict[str, Any], variants: list[dict[str, Any]], index: int, answer: str,
    config: GenerationConfig, stage: str,
) -> str:
    """Rewrite ``answer`` until a judge maps it back to variant ``index``, at most ``check_retries`` times."""
    listing = _describe(question["required_info"], variants)
    for _ in range(config.check_retries + 1):
        guess = await _reflect(llm, question["question"], answer, listing, len(variants), config, stage)
        if guess == index:
            return answer
        reply = await ask_json(
            llm,
            prompt(
                "You sharpen personalised advice. Reply with JSON.",
                (
                    f"Question: {question['question']}\nSituations:\n{listing}\n\nThis advice was meant for "
                    f"variant_{index} but reads like variant_{guess}:\n{answer}\n\nRewrite it in 2-3 sentences so "
                    f'it fits variant_{index} and clearly not the others. Return {{"answer": str}}.'
                ),
            ),
            stage=stage, schema=TEXT_SCHEMA, validate=TEXT_VALID,
            temperature=config.low_temperature, repair_turns=config.repair_turns,
        )
        answer = reply["answer"].strip()
    raise StageError(stage, f"the answer for variant_{index} of {question['question'][:60]!r} stayed ambiguous "
                     f"after {config.check_retries} rewrites")


async def _reflect(
    llm: ChatClient, question: str, answer: str, listing: str, count: int, config: GenerationConfig, stage: str
) -> int:
    """The judge's reading of which variant an answer was written for."""
    reply = await ask_json(
        llm,
        prompt(
            "You match advice to the situation it was written for. Reply with JSON.",
            (
                f"Question: {question}\nSituations:\n{listing}\n\nAdvice:\n{answer}\n\n"
                f'Which situation was this advice written for? Return {{"variant": number from 1 to {count}}}.'
            ),
        ),
        stage=stage, role="judge",
        schema=object_schema({"variant": {"type": "integer", "enum": list(range(1, count + 1))}}),
        validate=lambda r: [] if isinstance(r, dict) and r.get("variant") in range(1, count + 1)
        else [f"reply must be an object with 'variant' between 1 and {count}"],
        temperature=config.low_temperature, repair_turns=config.repair_turns,
    )
    return int(reply["variant"])


def question_record(question: dict[str, Any], answers: list[dict[str, Any]]) -> dict[str, Any]:
    """The A.4 ``qas`` entry for one question."""
    return {"query": question["question"], "required_info": list(question["required_info"]), "answer_choices": answers}


