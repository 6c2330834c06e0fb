"""Pydantic models of an AMemGym item, field for field as in the reference ``data.json``.

Field names follow the reference exactly so a file round-trips unchanged. Helpers here answer the
questions every other module asks (gold choice, sessions of a period) in one place.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from memevo.core.lazy_model import LazyModel


class _Record(LazyModel):
    model_config = ConfigDict(extra="forbid")


class UserProfile(_Record):
    uuid: str = Field(description="The persona's id (AMemGym: the item's id too).")
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
    event: str | None = Field(None, description="What happened to the user before this session (prose).")
    exposed_states: dict[str, str] = Field(description="Variables the user reveals in this session, with their "
                                           "values.")
    query: str = Field(description="The user's opening message; the user simulator continues from it.")
    messages: list[dict[str, str]] = Field([], description="A recorded conversation ({role, content} messages); "
                                           "empty: the simulator talks live.")
    session_time: str = Field(description="'YYYY-MM-DD HH:MM:SS' in simulated time.")


class StateUpdate(_Record):
    old: str | None = Field(description="The value before the period (null in period 0).")
    new: str = Field(description="The value at the period's end.")


class Period(_Record):
    period_start: str | None = Field(description="YYYY-MM-DD, the previous period's end; null in period 0.")
    period_end: str = Field(description="YYYY-MM-DD; period 0 ends on the item's start_time.")
    period_summary: str | None = Field(None, description="What changed in the period (prose, not scored).")
    sessions: list[Session] = Field(description="The conversations of the period, in time order.")
    state: dict[str, str] = Field(description="Every variable's value at the period's end.")
    updates: dict[str, StateUpdate] = Field(description="The variables that changed in the period (all of them in "
                                            "period 0).")
    update_cnts: dict[str, int] = Field(description="How often each variable changes over all periods.")


class AnswerChoice(_Record):
    state: list[str] = Field(description="Values of the question's required_info variables, in that order, for "
                             "which this is the right answer.")
    answer: str = Field(description="The answer text shown to the agent.")
    type: Literal["experience", "random"] = Field(description="experience: a state some period reaches; random: "
                                                  "padding to min_state_variants.")


class Question(_Record):
    query: str = Field(description="The question asked after every period.")
    required_info: list[str] = Field(description="The variables the right answer depends on.")
    answer_choices: list[AnswerChoice] = Field(description="The choices; in each period exactly one matches the "
                                               "state.")

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

    id: str = Field(description="Unique per item; names the user's run folder.")
    start_time: str = Field(description="YYYY-MM-DD, the end of period 0.")
    user_profile: UserProfile = Field(description="Who the simulated user is; the simulator reads formatted_str, the "
                                      "other fields are kept as AMemGym wrote them.")
    state_schema: dict[str, list[str]] = Field(description="Each variable and the values it can take.")
    periods: list[Period] = Field(description="Period 0 (the initial state), then the update periods.")
    qas: list[Question] = Field(description="Multiple-choice questions asked after every period.")
