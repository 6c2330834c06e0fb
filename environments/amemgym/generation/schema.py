"""Stages C.2 (question sampling), C.3 (schema refinement) and C.4 (conflict resolution).

Unlike the reference, the counts asked for are enforced: ``num_questions`` questions, each with
``num_states_per_question`` info types of exactly ``num_choices_per_state`` distinct values, and the
final schema keeps that count for every variable.
"""

from __future__ import annotations

import re
from typing import Any

from memevo.agents.llm.protocol import ChatClient
from memevo.environments.amemgym.generation.ask import (
    array_schema,
    ask_json,
    dumps,
    object_schema,
    prompt,
    string_schema,
)
from memevo.environments.amemgym.generation.config import GenerationConfig

VARIABLE_NAME = re.compile(r"[a-z][a-z0-9_]{1,59}")
"""State-variable names end up as ``state_schema`` keys shown to agents and judges: keep them readable."""


def choice_problems(where: str, choices: Any, count: int) -> list[str]:
    """Problems with one variable's value list: exact count, non-empty strings, no duplicates."""
    if not isinstance(choices, list) or not all(isinstance(c, str) and c.strip() for c in choices):
        return [f"{where}: choices must be a list of non-empty strings"]
    problems = []
    if len(choices) != count:
        problems.append(f"{where}: give exactly {count} choices, not {len(choices)}")
    if len({c.strip().lower() for c in choices}) != len(choices):
        problems.append(f"{where}: choices must be distinct")
    return problems


def _questions_schema(config: GenerationConfig) -> dict[str, Any]:
    n, k, q = config.num_choices_per_state, config.num_states_per_question, config.num_questions
    info = object_schema({"info_type": string_schema(), "info_choices": array_schema(string_schema(), min_items=n, max_items=n)})
    question = object_schema({"question": string_schema(), "required_info": array_schema(info, min_items=k, max_items=k)})
    return object_schema({"questions": array_schema(question, min_items=q, max_items=q)})


def _question_problems(parsed: Any, config: GenerationConfig) -> list[str]:
    questions = parsed.get("questions") if isinstance(parsed, dict) else None
    if not isinstance(questions, list):
        return ["reply must be an object with a 'questions' list"]
    problems = []
    if len(questions) != config.num_questions:
        problems.append(f"give exactly {config.num_questions} questions, not {len(questions)}")
    texts = set()
    for index, question in enumerate(questions, start=1):
        text = question.get("question") if isinstance(question, dict) else None
        infos = question.get("required_info") if isinstance(question, dict) else None
        if not isinstance(text, str) or not text.strip() or not isinstance(infos, list):
            problems.append(f"question {index}: needs a 'question' text and a 'required_info' list")
            continue
        if text.strip().lower() in texts:
            problems.append(f"question {index}: duplicates an earlier question")
        texts.add(text.strip().lower())
        if len(infos) != config.num_states_per_question:
            problems.append(f"question {index}: give exactly {config.num_states_per_question} required_info entries")
        names = [info.get("info_type", "").strip() if isinstance(info, dict) else "" for info in infos]
        if not all(names) or len(set(names)) != len(names):
            problems.append(f"question {index}: info_type names must be non-empty and distinct")
        for name, info in zip(names, infos):
            if isinstance(info, dict):
                problems += choice_problems(f"question {index}, {name!r}", info.get("info_choices"), config.num_choices_per_state)
    return problems


async def sample_questions(llm: ChatClient, profile: dict[str, Any], config: GenerationConfig) -> list[dict[str, Any]]:
    """C.2: recurring advice questions, each depending on a few changeable facts about the user."""
    horizon = config.num_periods * config.num_months_per_period
    messages = prompt(
        "You design long-term personalization benchmarks. Reply with JSON.",
        (
            f"User profile (as of {config.start_date}):\n{profile['formatted_str']}\n\n"
            f"Write {config.num_questions} questions this user could ask an assistant for advice at any point "
            f"during the next {horizon} months. The best answer to each question must depend on "
            f"{config.num_states_per_question} facts about the user's situation ('info_type'), each with "
            f"{config.num_choices_per_state} possible values ('info_choices').\n"
            "Pick facts that change now and then over months (not daily, not never) and cannot be guessed "
            "from the profile. Values of one fact must be mutually exclusive and easy to tell apart.\n"
            'Return {"questions": [{"question": str, "required_info": [{"info_type": str, '
            '"info_choices": [str, ...]}]}]}.'
        ),
    )
    parsed = await ask_json(
        llm,
        messages,
        stage="questions",
        schema=_questions_schema(config),
        validate=lambda reply: _question_problems(reply, config),
        temperature=config.high_temperature,
        repair_turns=config.repair_turns,
    )
    return [
        {
            "question": question["question"].strip(),
            "required_info": [
                {"info_type": info["info_type"].strip(), "info_choices": [c.strip() for c in info["info_choices"]]}
                for info in question["required_info"]
            ],
        }
        for question in parsed["questions"]
    ]


def original_types(questions: list[dict[str, Any]]) -> list[str]:
    """Info-type names in order of first appearance."""
    return list(dict.fromkeys(info["info_type"] for question in questions for info in question["required_info"]))


def _refine_problems(parsed: Any, questions: list[dict[str, Any]]) -> list[str]:
    entries = parsed.get("types") if isinstance(parsed, dict) else None
    if not isinstance(entries, list):
        return ["reply must be an object with a 'types' list"]
    originals = original_types(questions)
    seen: dict[str, str] = {}
    problems = []
    names = [entry.get("name", "").strip() if isinstance(entry, dict) else "" for entry in entries]
    if len(set(names)) != len(names):
        problems.append("every new name must be distinct")
    problems += [f"{name!r} is not a short snake_case name" for name in names if not VARIABLE_NAME.fullmatch(name)]
    for name, entry in zip(names, entries):
        for original in entry.get("merges", []) if isinstance(entry, dict) else []:
            if original not in originals:
                problems.append(f"{original!r} is not one of the original info types")
            elif original in seen:
                problems.append(f"{original!r} is mapped twice ({seen[original]!r} and {name!r})")
            else:
                seen[original] = name
    problems += [f"{original!r} is not mapped to any new name" for original in originals if original not in seen]
    if not problems:
        for index, question in enumerate(questions, start=1):
            mapped = [seen[info["info_type"]] for info in question["required_info"]]
            if len(set(mapped)) != len(mapped):
                problems.append(f"question {index} would need the same merged type twice; keep its info types apart")
    return problems


async def refine_schema(llm: ChatClient, questions: list[dict[str, Any]], config: GenerationConfig) -> dict[str, Any]:
    """C.3 + C.4: merge overlapping info types under clear names, then unify their value lists."""
    originals = original_types(questions)
    listing = "\n".join(
        f"- {info['info_type']!r} (values {dumps(info['info_choices'])}) used by: {question['question']}"
        for question in questions
        for info in question["required_info"]
    )
    item = object_schema({"name": string_schema(), "merges": array_schema({"enum": originals}, min_items=1)})
    messages = prompt(
        "You clean up the variable schema of a user simulation. Reply with JSON.",
        (
            f"These info types describe one user's changing situation:\n{listing}\n\n"
            "Group info types that describe the same fact and give each group a clear, unambiguous snake_case "
            "name. Types describing different facts stay in separate groups. Every original type must appear in "
            'exactly one group.\nReturn {"types": [{"name": str, "merges": [original info type, ...]}]}.'
        ),
    )
    parsed = await ask_json(
        llm,
        messages,
        stage="schema",
        schema=object_schema({"types": array_schema(item, min_items=1)}),
        validate=lambda reply: _refine_problems(reply, questions),
        temperature=config.low_temperature,
        repair_turns=config.repair_turns,
    )
    rename = {original: entry["name"].strip() for entry in parsed["types"] for original in entry["merges"]}
    sources: dict[str, list[list[str]]] = {}
    for question in questions:
        for info in question["required_info"]:
            sources.setdefault(rename[info["info_type"]], []).append(info["info_choices"])
    state_schema = {name: lists[0] for name, lists in sources.items() if _all_same(lists)}
    conflicting = {name: lists for name, lists in sources.items() if name not in state_schema}
    if conflicting:
        state_schema |= await _resolve_conflicts(llm, questions, rename, conflicting, config)
    ordered = {name: state_schema[name] for name in sources}
    rewritten = [
        {"question": q["question"], "required_info": [rename[info["info_type"]] for info in q["required_info"]]}
        for q in questions
    ]
    return {"state_schema": ordered, "questions": rewritten}


def _all_same(lists: list[list[str]]) -> bool:
    return all(sorted(c.lower() for c in lists[0]) == sorted(c.lower() for c in other) for other in lists[1:])


async def _resolve_conflicts(
    llm: ChatClient,
    questions: list[dict[str, Any]],
    rename: dict[str, str],
    conflicting: dict[str, list[list[str]]],
    config: GenerationConfig,
) -> dict[str, list[str]]:
    """C.4: one value list per merged type that serves every question using it."""
    n = config.num_choices_per_state
    names = list(conflicting)
    listing = "\n".join(
        f"- {name}: candidate values {dumps(lists)}; questions: "
        + " | ".join(q["question"] for q in questions if name in {rename[i["info_type"]] for i in q["required_info"]})
        for name, lists in conflicting.items()
    )
    item = object_schema({"info_type": {"enum": names}, "choices": array_schema(string_schema(), min_items=n, max_items=n)})
    messages = prompt(
        "You unify the value lists of merged variables. Reply with JSON.",
        (
            f"Each variable below was merged from several sources:\n{listing}\n\n"
            f"For each variable write exactly {n} values that serve all its questions, are mutually exclusive, "
            "and allow a realistic progression from one to another over time.\n"
            'Return {"types": [{"info_type": str, "choices": [str, ...]}]}.'
        ),
    )

    def problems(parsed: Any) -> list[str]:
        entries = parsed.get("types") if isinstance(parsed, dict) else None
        if not isinstance(entries, list):
            return ["reply must be an object with a 'types' list"]
        found = [entry.get("info_type") for entry in entries if isinstance(entry, dict)]
        issues = [f"give {name!r} exactly once" for name in names if found.count(name) != 1]
        for entry in entries:
            if isinstance(entry, dict):
                issues += choice_problems(repr(entry.get("info_type")), entry.get("choices"), n)
        return issues

    parsed = await ask_json(
        llm,
        messages,
        stage="schema",
        schema=object_schema({"types": array_schema(item, min_items=len(names), max_items=len(names))}),
        validate=problems,
        temperature=config.low_temperature,
        repair_turns=config.repair_turns,
    )
    return {entry["info_type"]: [c.strip() for c in entry["choices"]] for entry in parsed["types"]}
