"""MemGym's memory-isolated baseline: the agent's LLM answering every question with no memory at all.

It tells what the model gets right by guessing from the question and its options alone, so the agent's
gain over it is what memory contributes. The question prompt is the same in every period (only the gold
answer moves), so the bare LLM is asked once per (user, question) and its choice is scored against
each period's gold answer; the table is saved and reused like the upper bound's. Replies are decoded
as the agent's answers are (``constrained`` or free) and parsed by the same rules.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic import PrivateAttr

from memevo.agents.llm.protocol import ChatClient, Role
from memevo.core.lazy_model import LazyModel
from memevo.environments.amemgym.data.models import Item
from memevo.environments.answering import answer_chooser
from memevo.environments.metrics.bare_llm import BareQuestion, ask_all
from memevo.environments.qa import AnswerMode, ChoiceOutcome, QuestionPrompts, prompts_digest

NO_MEMORY_FILE = "no_memory.json"
"""Where an eval folder keeps its no-memory baseline table."""


class NoMemoryEntry(LazyModel):
    """The bare LLM's choice for one question of one user (None when the reply never parsed)."""

    item_id: str
    question_index: int
    choice: int | None
    format_error: bool = False
    random_fallback: bool = False
    raw_reply: str = ""


class NoMemoryTable(LazyModel):
    """No-memory choices per (item, question); JSON-serialisable so a run can reuse it."""

    model: str = ""
    constrained: bool = False
    prompts: str = ""
    """Digest of the question prompts asked (empty: memevo's wording); a stored table is reused only if equal."""
    answer_mode: AnswerMode = "generated"
    """How the answers were given (a stored table is reused only if this matches)."""
    entries: list[NoMemoryEntry] = []
    _index: dict[tuple[str, int], NoMemoryEntry] = PrivateAttr(default_factory=dict)

    def model_post_init(self, __context: object) -> None:
        self._index = {(e.item_id, e.question_index): e for e in self.entries}

    def covers(self, items: Sequence[Item]) -> bool:
        return all((item.id, q) in self._index for item in items for q in range(len(item.qas)))

    def correct(self, item: Item, period: int, question_index: int) -> bool:
        """Whether the no-memory choice is this period's gold answer."""
        try:
            entry = self._index[(item.id, question_index)]
        except KeyError:
            raise KeyError(f"no-memory table has no entry for item {item.id}, question {question_index}") from None
        return entry.choice == item.qas[question_index].gold_index(item.periods[period].state) + 1


async def compute_no_memory(
    llm: ChatClient,
    items: Sequence[Item],
    *,
    model: str = "",
    role: Role = "baseline",
    max_concurrency: int = 8,
    amemgym_compat: bool = False,
    constrained: bool = True,
    seed: int = 0,
    prompts: QuestionPrompts | None = None,
    answer_mode: AnswerMode = "generated",
    on_entry: Callable[[NoMemoryEntry], None] | None = None,
) -> NoMemoryTable:
    """Ask the bare LLM every question of every item once, with bounded concurrency."""
    chooser = answer_chooser(answer_mode, constrained=constrained)
    needed = [(item, q) for item in items for q in range(len(item.qas))]

    def ask(item: Item, question_index: int) -> BareQuestion:
        question = item.qas[question_index]
        return BareQuestion(chooser.qa_prompt(question, prompts), question, (seed, "no_memory", item.id, question_index))

    def to_entry(index: int, outcome: ChoiceOutcome) -> NoMemoryEntry:
        item, question_index = needed[index]
        return NoMemoryEntry(
            item_id=item.id,
            question_index=question_index,
            choice=outcome.choice,
            format_error=outcome.format_error,
            random_fallback=outcome.random_fallback,
            raw_reply=outcome.retry_reply or outcome.raw_reply,
        )

    entries = await ask_all(llm, [ask(*need) for need in needed], to_entry, role=role, chooser=chooser,
                            json_mode=False, amemgym_compat=amemgym_compat, max_concurrency=max_concurrency,
                            on_entry=on_entry)
    return NoMemoryTable(model=model, constrained=constrained, prompts=prompts_digest(prompts), answer_mode=answer_mode,
                         entries=entries)
