"""Knobs of the procedural generator; defaults follow AMemGym v1.base (reference section B)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from pydantic import ConfigDict, Field, field_validator

from memevo.core.lazy_model import LazyModel


class SynthConfig(LazyModel):
    """What to generate. The same config always yields byte-identical data (everything flows from ``seed``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    users: int = Field(2, ge=1, description="Number of simulated users (items).")
    periods: int = Field(10, ge=0, description="Update periods after the initial period 0.")
    questions: int = Field(10, ge=1, description="Questions per user; each has a different main variable.")
    seed: int = Field(0, description="Seed of every random choice: the same seed, the same file.")
    states_per_question: int = Field(2, ge=1, description="required_info entries per question.")
    choices_per_state: int = Field(3, ge=2, description="Allowed values per state variable.")
    changes_per_period: int = Field(4, ge=1, description="Target changes per update period; the actual number "
                                     "is drawn from [n-1, n+1] and capped by the number of variables.")
    sessions_init: int | None = Field(None, ge=1, description="Sessions in period 0 (each reveals 1-3 variables); "
                                      "default: half the number of variables, rounded up.")
    min_state_variants: int = Field(4, ge=1, description="Answer choices per question at least (padding with "
                                    "unvisited value tuples).")
    start_date: str = Field("2020-10-01", description="Simulation start, YYYY-MM-DD.")
    months_per_period: int = Field(3, ge=1, description="Simulated months between periods.")
    filler_sentences: int = Field(0, ge=0, description="Small-talk sentences added to every opening query; the "
                                  "length knob (about 18 tokens each).")
    answers_name_values: bool = Field(False, description="Each answer option opens with the state values it fits, "
                                      "so a small model can tell the options apart by the values it remembers.")
    users_name_values: bool = Field(False, description="Users state each value in its own words, the words the "
                                    "options use (\"My exercise routine: yoga at home.\"), not in a hand-written "
                                    "paraphrase: a world a small model can read, since it cannot link a paraphrase "
                                    "to the option that names it. Only the opening queries change.")
    vocabulary: Path | None = Field(None, description="Vocabulary JSON; default: the bundled asset.")

    @field_validator("start_date")
    @classmethod
    def _date_format(cls, value: str) -> str:
        dt.datetime.strptime(value, "%Y-%m-%d")
        return value
