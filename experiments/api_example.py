"""memevo's Python API with a memory agent of your own and a dataset made in Python.

The agent keeps every user message as a note and shows the notes to its model under an evolvable system prompt;
the four users tell it about their commute and their drink, which change between two periods, and are asked which
plan fits them now. The script scores the agent, evolves its system prompt for one generation and prints both.

    python experiments/api_example.py --base-url http://localhost:8000/v1   # any OpenAI-compatible endpoint
    python experiments/api_example.py                                       # OPENAI_BASE_URL, else the embedded model

Then: memevo ui --run-dir runs/api-example/evolution   (or memevo report runs/api-example/evolution)
"""

from __future__ import annotations

import argparse
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from memevo import EvaluationResult, OptimizationResult, evaluate, optimize
from memevo.agents.base import AgentAnswer, AgentSpec, ComponentSpec, MemoryAgent
from memevo.agents.llm.config import LLMConfig
from memevo.agents.llm.protocol import ChatClient, Message, Role
from memevo.agents.policy import MemoryPolicy
from memevo.agents.templates import render
from memevo.environments.amemgym.data.models import (
    AnswerChoice,
    Item,
    Period,
    Question,
    Session,
    StateUpdate,
    UserProfile,
)

MAX_NOTES = 20
SYSTEM_PROMPT = ComponentSpec(
    name="system_prompt",
    description="What the assistant is told before each reply, with the notes it kept about the user.",
    default="You are a helpful assistant. What the user told you, oldest first:\n{notes}",
    required_placeholders=("notes",),
)


class NotesAgent(MemoryAgent):
    """Keeps each user message as a note (the last ``MAX_NOTES`` of them) and answers with all of them."""

    spec = AgentSpec(kind="notes", description="Every user message kept as a note, shown under the system prompt.",
                     components=(SYSTEM_PROMPT,))

    def __init__(self, policy: MemoryPolicy, llm: ChatClient) -> None:
        super().__init__(policy, llm)
        self.notes: list[str] = []

    def _messages(self, text: str) -> list[Message]:
        notes = "\n".join(f"- {note}" for note in self.notes) or "(nothing yet)"
        system = render(self.prompt("system_prompt"), {"notes": notes}, {"notes"})
        return [{"role": "system", "content": system}, {"role": "user", "content": text}]

    async def respond(self, message: str, now: datetime) -> str:
        reply = (await self.llm.chat(self._messages(message), role="agent")).text
        await self.ingest(message, reply, now)
        return reply

    async def answer(self, prompt: str, *, query: str, now: datetime, json_schema: dict[str, Any] | None = None,
                     role: Role = "agent") -> AgentAnswer:
        reply = await self.llm.chat(self._messages(prompt), role=role, json_schema=json_schema)
        return AgentAnswer(text=reply.text, consulted_memory="\n".join(self.notes))

    async def ingest(self, user_message: str, assistant_message: str, now: datetime) -> None:
        self.notes = [*self.notes, f"{now:%Y-%m-%d}: {user_message}"][-MAX_NOTES:]

    async def end_session(self, now: datetime) -> None:
        """Nothing is pending: notes are kept as messages arrive."""

    def state(self) -> dict[str, Any]:
        return {"notes": list(self.notes)}

    def load_state(self, state: dict[str, Any]) -> None:
        self.notes = list(state["notes"])


CHOICES = {"commute": ["bike", "bus", "train"], "drink": ["tea", "coffee", "juice"]}


def make_users(count: int = 4) -> list[Item]:
    """``count`` users whose commute and drink change in each of two periods, asked one question about each."""
    users = []
    for number in range(count):
        states = [{name: values[(number + period) % 3] for name, values in CHOICES.items()} for period in range(2)]
        periods = []
        for index, state in enumerate(states):
            start = date(2024, 1, 1) + timedelta(days=30 * index)
            sessions = [Session(exposed_states={name: value}, query=f"By the way, my {name} is now {value}.",
                                session_time=f"{start + timedelta(days=day):%Y-%m-%d} 09:00:00")
                        for day, (name, value) in enumerate(state.items())]
            previous = states[index - 1] if index else {}
            periods.append(Period(period_start=None if index == 0 else f"{start:%Y-%m-%d}",
                                  period_end=f"{start + timedelta(days=29):%Y-%m-%d}", sessions=sessions, state=state,
                                  updates={n: StateUpdate(old=previous.get(n), new=v) for n, v in state.items()},
                                  update_cnts=dict.fromkeys(state, 2)))
        questions = [Question(query=f"Which {name} plan suits me this month?", required_info=[name],
                              answer_choices=[AnswerChoice(state=[value], type="experience",
                                                           answer=f"The plan for {value}") for value in values])
                     for name, values in CHOICES.items()]
        profile = UserProfile(uuid=f"user-{number}", age=30 + number, gender="unspecified", marital_status="single",
                              education_level="college", occupation="engineer",
                              formatted_str=f"User {number}, an engineer who commutes and likes a drink.")
        users.append(Item(id=f"user-{number}", start_time="2024-01-30", user_profile=profile,
                          state_schema=dict(CHOICES), periods=periods, qas=questions))
    return users


def main(base_url: str | None, run_folder: Path) -> tuple[EvaluationResult, OptimizationResult]:
    llm = LLMConfig.model_validate({"base_url": base_url} if base_url else {})  # the model: MEMEVO_MODEL or the one served
    users = make_users()
    seed = MemoryPolicy(kind="notes", llm=llm)
    scored = evaluate(seed, users, out=run_folder / "eval", agent_class=NotesAgent)
    print(f"seed accuracy on {len(scored.user_scores)} users: {scored.scores.accuracy:.2f} "
          f"({scored.usage.calls} calls)")
    config = {"name": "api-example", "components": ["system_prompt"], "upper_bound": False,
              "split": {"train": 1, "val": 1, "test": 2}, "budget": {"generations": 1, "candidates": 1},
              "episode": {"rounds_init": 1, "rounds_update": 1}, "llm": {"proposer": llm.model_dump()}}
    found = optimize(seed, users, run_dir=run_folder / "evolution", config=config, agent_class=NotesAgent)
    print(f"stopped: {found.stop_reason}; {len(found.candidates)} candidates; test accuracy seed "
          f"{found.seed_test_scores.accuracy:.2f}, best {found.best_test_scores.accuracy:.2f}")
    print(f"best minus seed on the test users: {found.test_comparison.mean_diff} (paired t-test p "
          f"{found.test_comparison.t_p}, {found.test_comparison.n} users)")
    print("best system prompt:\n" + found.best_policy.prompts["system_prompt"])
    if found.mlflow is not None:
        print(f"MLflow: {found.mlflow.tracking_uri}, parent run {found.mlflow.parent_run_id}")
    return scored, found


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="An OpenAI-compatible endpoint (default: OPENAI_BASE_URL, else the "
                        "embedded model).")
    parser.add_argument("--run-dir", type=Path, default=Path("runs/api-example"))
    arguments = parser.parse_args()
    main(arguments.base_url, arguments.run_dir)
