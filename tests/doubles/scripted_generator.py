"""TEST DOUBLE: answers every generation stage by reading the prompt, like a perfectly obedient model.

Values are written as ``name=value`` tokens inside queries so the double's judge can "read" them back;
switches make it misbehave in controlled ways (invalid first state update, a leaking first query, a
user that always fails one stage).
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from memevo.agents.llm.protocol import Message, Role


class ScriptedGenerator:
    """A ``ScriptedLLM`` handler; pass ``ScriptedLLM(ScriptedGenerator(...))``."""

    def __init__(self, *, bad_first_update: bool = False, leak_first_query: bool = False,
                 fail_user: str | None = None, fail_marker: str = "these facts changed") -> None:
        self.bad_first_update = bad_first_update
        self.leak_first_query = leak_first_query
        self.fail_user = fail_user
        self.fail_marker = fail_marker

    def __call__(self, messages: list[Message], role: Role, wants_json: bool) -> str:
        prompt = messages[1]["content"] if len(messages) > 1 else messages[0]["content"]
        if self.fail_user and self.fail_user in prompt and self.fail_marker in prompt:
            return "not json at all"
        if "Your answer has these problems" in messages[-1]["content"]:
            self.bad_first_update = False
        return json.dumps(self._answer(prompt, messages))

    def _answer(self, prompt: str, messages: list[Message]) -> Any:
        if prompt.startswith("Persona description"):
            name = " ".join(re.search(r"persona: (\S+ \S+)", prompt).group(1).split()[:2])
            return {"name": name, "complementary_info": "A person with a busy life and many interests."}
        if "questions this user could ask" in prompt:
            return self._questions(prompt)
        if prompt.startswith("These info types"):
            originals = list(dict.fromkeys(re.findall(r"^- '([^']+)'", prompt, flags=re.M)))
            return {"types": [{"name": name, "merges": [name]} for name in originals]}
        if prompt.startswith("Each variable below was merged"):
            found = re.findall(r"^- (\S+): candidate values (\[\[.*?\]\]);", prompt, flags=re.M)
            return {"types": [{"info_type": name, "choices": json.loads(lists)[0]} for name, lists in found]}
        if "Pick each variable's value" in prompt:
            schema = json.loads(re.search(r"possible values:\n(.*)\n", prompt).group(1))
            return {"state": {name: values[0] for name, values in schema.items()}}
        if "Change about" in prompt:
            return self._update(prompt)
        if "these facts changed" in prompt:
            changed = re.findall(r"^- (\S+): .* -> .*$", prompt, flags=re.M)
            return {"events": [{"states": [name], "event": f"Something happened about {name}."} for name in changed]}
        if "Possible situations:" in prompt:
            count = len(re.findall(r"^variant_\d+:", prompt, flags=re.M))
            return {f"variant_{i}": f"Advice written for situation #{i}." for i in range(1, count + 1)}
        if prompt.startswith("Question:") and "Which situation" in prompt:
            return {"variant": int(re.search(r"situation #(\d+)", prompt).group(1))}
        if "reads like variant_" in prompt:
            meant = re.search(r"meant for variant_(\d+)", prompt).group(1)
            return {"answer": f"Advice written for situation #{meant}."}
        if prompt.startswith("Message:") and "For each fact" in prompt:
            return self._judge(prompt)
        if prompt.startswith("Message:"):
            facts = re.search(r"about the writer: (.*?); and nothing", prompt).group(1)
            return {"query": "Please help me, " + " ".join(f.replace(" = ", "=") for f in facts.split("; ")) + "."}
        if "situation on" in prompt:
            return self._initial_queries(prompt)
        if "This changed:" in prompt:
            changed = re.findall(r"^- (\S+): .* -> (.*)$", prompt, flags=re.M)
            return {"query": "Update for you: " + " ".join(f"{n}={v}" for n, v in changed) + "."}
        raise AssertionError(f"scripted generator does not know this prompt: {prompt[:120]!r}")

    @staticmethod
    def _questions(prompt: str) -> dict[str, Any]:
        count = int(re.search(r"Write (\d+) questions", prompt).group(1))
        per = int(re.search(r"depend on\s+(\d+) facts", prompt).group(1))
        choices = int(re.search(r"each with\s+(\d+) possible values", prompt).group(1))
        questions = []
        for q in range(count):
            # Question q shares its first variable with question q-1 (different value list): exercises C.4.
            names = [f"var{q + j}" for j in range(per)]
            questions.append({
                "question": f"What should I do about topic {q}?",
                "required_info": [
                    {"info_type": name, "info_choices": [f"{name}v{c}{'' if j else chr(97 + q % 2)}" for c in range(choices)]}
                    for j, name in enumerate(names)
                ],
            })
        return {"questions": questions}

    def _update(self, prompt: str) -> dict[str, Any]:
        schema = json.loads(re.search(r"possible values:\n(.*)\n", prompt).group(1))
        current = json.loads(re.search(r"Current values:\n(.*)\n", prompt).group(1))
        counts = json.loads(re.search(r"changed so far: (.*)\n", prompt).group(1))
        wanted = int(re.search(r"Change about (\d+)", prompt).group(1))
        cap = int(re.search(r"already changed (\d+) times", prompt).group(1))
        open_vars = sorted((n for n in schema if counts[n] < cap), key=lambda n: (counts[n], n))[:wanted]
        if self.bad_first_update:
            return {"period_summary": "A period.", "updated": {open_vars[0]: current[open_vars[0]], "ghost": "x"}}
        updated = {n: schema[n][(schema[n].index(current[n]) + 1) % len(schema[n])] for n in open_vars}
        return {"period_summary": "Life moved on.", "updated": updated}

    def _initial_queries(self, prompt: str) -> dict[str, Any]:
        facts = re.findall(r"^- (\S+) = (.*)$", prompt, flags=re.M)
        queries = [{"query": f"Hi, {name}={value} these days.", "exposed_states": {name: value}} for name, value in facts]
        if self.leak_first_query:
            self.leak_first_query = False
            other_name, other_value = facts[1]
            queries[0]["query"] += f" Also {other_name}={other_value}."
        return {"queries": queries}

    @staticmethod
    def _judge(prompt: str) -> dict[str, str]:
        message = prompt.split("\n\nFor each fact", 1)[0]
        said = dict(re.findall(r"(\w+)=(\w+)", message))
        options = re.findall(r"^- (\S+): (\[.*\])$", prompt, flags=re.M)
        answer = {}
        for name, listed in options:
            values = ast.literal_eval(listed)
            answer[name] = said[name] if said.get(name) in values else ("not mentioned" if "not mentioned" in values else values[0])
        return answer

