"""The upper bound (AMemGym F.2): the bare LLM answering with the true state written into the prompt.

Scores are keyed by (item, question, state tuple); the reference keyed them by the state tuple alone, so
two questions of a user with the same tuple overwrote each other (I.7). ``amemgym_compat`` reproduces that:
every answer choice of every question is asked, as the reference asked them, and a period's score is the reply
of the last question (in item order) that offered its state. Each (question, state) is asked
once and reused for every period in which it is the gold state, concurrently and without the reference's
3-second sleeps. Unreadable replies get one retry and then count as wrong (and are reported), unless
``amemgym_compat`` asks for the reference's random fallback. ``constrained`` asks with the answer's JSON
schema, as the runner does for the agent under ``EpisodeConfig.constrained_answers``, so both sides of
the memory score are decoded the same way; unconstrained, the bare LLM gets plain JSON mode.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic import PrivateAttr

from memevo.agents.llm.protocol import ChatClient, Role
from memevo.core.lazy_model import LazyModel
from memevo.environments.amemgym.data.models import Item
from memevo.environments.answering import answer_chooser
from memevo.environments.metrics.bare_llm import BareQuestion, ask_all
from memevo.environments.metrics.baseline import gold_state
from memevo.environments.qa import AnswerMode, ChoiceOutcome, QuestionPrompts, prompts_digest

UPPER_BOUND_FILE = "upper_bound.json"
"""Where an eval or evolution folder keeps its upper-bound table (read back by tracking and resumes)."""

UpperBoundKey = tuple[str, int, tuple[str, ...]]
"""(item id, question index, state tuple): one upper-bound reply."""


class UpperBoundEntry(LazyModel):
    """The bare LLM's answer to one question given one true state."""

    item_id: str
    question_index: int
    state: list[str]
    correct: bool
    format_error: bool = False
    random_fallback: bool = False
    raw_reply: str = ""

    @property
    def key(self) -> UpperBoundKey:
        return self.item_id, self.question_index, tuple(self.state)


class UpperBoundTable(LazyModel):
    """Upper-bound scores per (item, question, state); JSON-serialisable so a run can reuse it."""

    model: str = ""
    constrained: bool = False
    """Whether the answers were asked with their JSON schema (a stored table is reused only if this matches)."""
    prompts: str = ""
    """Digest of the question prompts asked (empty: memevo's wording); a stored table is reused only if equal."""
    answer_mode: AnswerMode = "generated"
    """How the answers were given (a stored table is reused only if this matches)."""
    keyed_by_state: bool = False
    """AMemGym's keying (``amemgym_compat``): every choice asked, a period's score looked up by its state tuple alone,
    the last question offering that state winning (a stored table is reused only if this matches)."""
    entries: list[UpperBoundEntry] = []
    _index: dict[UpperBoundKey, UpperBoundEntry] = PrivateAttr(default_factory=dict)

    def model_post_init(self, __context: object) -> None:
        if self.keyed_by_state:  # in the order asked: a later question's reply for the same state replaces it
            by_state = {(e.item_id, tuple(e.state)): e for e in self.entries}
            self._index = {e.key: by_state[e.item_id, tuple(e.state)] for e in self.entries}
        else:
            self._index = {e.key: e for e in self.entries}

    def covers(self, items: Sequence[Item]) -> bool:
        """Whether every (question, state) these items need has an entry."""
        return all((item.id, q, tuple(state)) in self._index for item in items
                   for q, state in needed_states(item, every_choice=self.keyed_by_state))

    def entry(self, item: Item, period: int, question_index: int) -> UpperBoundEntry:
        """The bare LLM's reply to this question given this period's true state (under ``keyed_by_state``, the reply
        of the last question that offered that state)."""
        key = (item.id, question_index, tuple(gold_state(item, period, question_index)))
        try:
            return self._index[key]
        except KeyError:
            raise KeyError(
                f"upper-bound table has no entry for item {key[0]}, question {key[1]}, state {list(key[2])}"
            ) from None

    def score(self, item: Item, period: int, question_index: int) -> float:
        """1.0 or 0.0: did the bare LLM pick the gold answer given this period's true state?"""
        return float(self.entry(item, period, question_index).correct)

    @property
    def format_errors(self) -> int:
        """Replies that could not be read (scored as wrong, or as a random pick under amemgym_compat)."""
        return sum(e.format_error for e in self.entries)

    @property
    def format_error_rate(self) -> float:
        return self.format_errors / len(self.entries) if self.entries else 0.0


def needed_states(item: Item, *, every_choice: bool = False) -> list[tuple[int, tuple[str, ...]]]:
    """Distinct (question, gold state) pairs over all periods, in first-seen order; with ``every_choice``, every
    answer choice's state of every question, in the reference's order (question, then choice)."""
    if every_choice:
        return list(dict.fromkeys((q, tuple(choice.state)) for q, question in enumerate(item.qas)
                                  for choice in question.answer_choices))
    seen: dict[tuple[int, tuple[str, ...]], None] = {}
    for period in range(len(item.periods)):
        for question_index in range(len(item.qas)):
            seen.setdefault((question_index, tuple(gold_state(item, period, question_index))), None)
    return list(seen)


async def compute_upper_bound(
    llm: ChatClient,
    items: Sequence[Item],
    *,
    model: str = "",
    role: Role = "upper_bound",
    max_concurrency: int = 8,
    amemgym_compat: bool = False,
    constrained: bool = True,
    seed: int = 0,
    prompts: QuestionPrompts | None = None,
    answer_mode: AnswerMode = "generated",
    on_entry: Callable[[UpperBoundEntry], None] | None = None,
) -> UpperBoundTable:
    """Ask the bare LLM every needed (item, question, state) once, with bounded concurrency."""
    chooser = answer_chooser(answer_mode, constrained=constrained)
    needed = [(item, q, state) for item in items for q, state in needed_states(item, every_choice=amemgym_compat)]

    def ask(item: Item, question_index: int, state: tuple[str, ...]) -> BareQuestion:
        question = item.qas[question_index]
        prompt = chooser.upper_bound_prompt(question, dict(zip(question.required_info, state, strict=True)), prompts)
        key = (seed, "upper_bound", item.id, question_index, *state)
        return BareQuestion(prompt, question, key)

    def to_entry(index: int, outcome: ChoiceOutcome) -> UpperBoundEntry:
        item, question_index, state = needed[index]
        gold = [choice.state for choice in item.qas[question_index].answer_choices].index(list(state)) + 1
        return UpperBoundEntry(
            item_id=item.id,
            question_index=question_index,
            state=list(state),
            correct=outcome.choice == gold,
            format_error=outcome.format_error,
            random_fallback=outcome.random_fallback,
            raw_reply=outcome.retry_reply or outcome.raw_reply,
        )

    entries = await ask_all(llm, [ask(*need) for need in needed], to_entry, role=role, chooser=chooser,
                            json_mode=True, amemgym_compat=amemgym_compat, max_concurrency=max_concurrency,
                            on_entry=on_entry)
    return UpperBoundTable(model=model, constrained=constrained, prompts=prompts_digest(prompts), answer_mode=answer_mode,
                           keyed_by_state=amemgym_compat, entries=entries)
