"""Pydantic models of an AMemGym item, field for field as in the reference ``data.json``.

Field names follow the reference exactly so a file round-trips unchanged. Helpers here answer the
questions every other module asks (gold choice, sessions of a period) in one place.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from memevo.agents.lazy_model import LazyModel


class _Record(LazyModel):
    model_config = ConfigDict(extra="forbid")


class UserProfile(_Record):
    uuid: str
    name: str = "N/A"
    age: int
    gender: str
    marital_status: str
    education_level: str
    occupation: str
    hobbies_and_interests: str = "N/A"
    skills_and_expertise: str = "N/A"
    complementary_info: str = ""
    formatted_str: str = Field(description="The profile text the user simulator reads.")


class Session(_Record):
    event: str | None = None
    exposed_states: dict[str, str]
    query: str
    messages: list[dict[str, str]] = []
    session_time: str = Field(description="'YYYY-MM-DD HH:MM:SS' in simulated time.")


class StateUpdate(_Record):
    old: str | None
    new: str


class Period(_Record):
    period_start: str | None
    period_end: str
    period_summary: str | None = None
    sessions: list[Session]
    state: dict[str, str]
    updates: dict[str, StateUpdate]
    update_cnts: dict[str, int]


class AnswerChoice(_Record):
    state: list[str]
    answer: str
    type: Literal["experience", "random"]


class Question(_Record):
    query: str
    required_info: list[str]
    answer_choices: list[AnswerChoice]

    def gold_index(self, state: dict[str, str]) -> int:
        """0-based index of the choice matching ``state`` on ``required_info``.

        Raises ``ValueError`` when none matches: the reference silently fell back to the last
        choice (defect I.6), which would score garbage as if it were data.
        """
        target = [state[key] for key in self.required_info]
        for index, choice in enumerate(self.answer_choices):
            if choice.state == target:
                return index
        raise ValueError(f"no answer choice matches state {target} for question {self.query[:60]!r}")


class Item(_Record):
    """One simulated user: profile, state schema, periods and questions."""

    id: str
    start_time: str
    user_profile: UserProfile
    state_schema: dict[str, list[str]]
    periods: list[Period]
    qas: list[Question]
