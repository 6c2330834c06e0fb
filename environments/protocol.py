"""The Environment protocol: what the evolution loop, evaluation and reports need from a memory benchmark.

As in Gymnasium and GEPA's adapter, the environment owns the world and the agent sees only messages: the
environment loads its items, plays them to an agent (on-policy, a user simulator talking live; or off-policy,
fixed sessions replayed through ``ingest`` in order), asks its questions, scores the answers and says what the
proposer may read about them. Everything after that is shared: an episode is an ``EpisodeResult`` of periods
(question points; a benchmark that asks once, after the last session, has one period), each question a
``QARecord`` whose ``value`` in [0, 1] is what accuracy averages and whose ``category`` is what per-category
tables group by. An implementation is one module plus a registry entry (``environments.registry``).

Leak guarantee of ``feedback``: in ``question_only`` mode a record carries the question text and the consulted
memory only, never the choices, the agent's answer, the gold answer or the outcome; the gold answer and the
outcome need ``with_ground_truth`` (complete mode).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Generic, TypeVar

from pydantic import Field

from memevo.agents.base import MemoryAgent
from memevo.core.lazy_model import LazyModel
from memevo.environments.capabilities import Capabilities, Session
from memevo.environments.feedback import FeedbackConfig, FeedbackMode, FeedbackRecord, PeriodFeedback, letter
from memevo.environments.item_run import PLAIN_RUN, ItemRun
from memevo.environments.records import EpisodeResult, PeriodResult, QARecord, ScoringMethod

if TYPE_CHECKING:
    from memevo.agents.llm.protocol import ChatClient
    from memevo.environments.runner import EpisodeConfig, SessionSource

ItemT = TypeVar("ItemT")


class QuestionView(LazyModel):
    """One question of an item at one period, as the environment asks it."""

    index: int = Field(description="Position of the question in the item (stable across periods).")
    query: str = Field(description="The bare question.")
    category: str | None = Field(default=None, description="The benchmark's category, for per-category reporting.")
    choices: list[str] | None = Field(default=None, description="Option texts of a multiple-choice question; None: free text.")
    gold: str = Field(description="The gold answer text (multiple choice: the gold option's text).")
    gold_choice: int | None = Field(default=None, description="1-based gold option (multiple choice only).")
    scoring: ScoringMethod = Field(default="choice", description="How its answer is scored (what a figure's name says).")

    @property
    def multiple_choice(self) -> bool:
        return self.choices is not None


class AnswerScore(LazyModel):
    """One scored answer; ``score`` in [0, 1] is what accuracy averages."""

    score: float = Field(ge=0.0, le=1.0)
    method: ScoringMethod
    correct: bool = Field(description="Full credit (score 1); what pass/fail tables and the evidence show.")
    detail: str | None = Field(default=None, description="The judge's reply, or why the answer got no credit.")


class Environment(ABC, Generic[ItemT]):
    """A memory benchmark behind one interface; built by ``environments.registry.make_environment``.

    ``episode`` carries the run settings every environment honours (answer mode, constrained answers, users at
    once, seed, the frozen-state check); ``judge`` is the client free-text answers are judged with, when the
    environment scores by ``llm_judge`` (None otherwise).
    """

    name: ClassVar[str]
    """The registry name (``environment:`` in a config)."""
    capabilities: ClassVar[Capabilities]
    """What the environment can measure and how it is played; every caller asks these, never the name."""
    record_keys: ClassVar[frozenset[str]] = frozenset()
    """Keys every record of the environment's JSON files has: a file read as another environment's is recognised by
    them (``environments.formats``); empty: its files are not recognised."""

    def __init__(self, episode: EpisodeConfig, *, judge: ChatClient | None = None) -> None:
        self.episode = episode
        self.judge = judge

    @property
    def sessions(self) -> Session:
        """Whether items are played live with a user simulator or replayed from their own sessions."""
        return self.capabilities.sessions

    # -- items ---------------------------------------------------------------------------------------------------

    @abstractmethod
    def load_items(self, source: str | Path, *, limit: int | None = None) -> list[ItemT]:
        """The items in a downloaded file or folder (or a dataset id, where the environment reads one), the first
        ``limit`` of them; bad input is a ``UserInputError`` naming the file and field."""

    @abstractmethod
    def item_id(self, item: ItemT) -> str:
        """The item's unique id: its user id in runs, stores and splits."""

    def prepared(self, items: list[ItemT], *, max_periods: int | None = None, max_questions: int | None = None,
                 source: str) -> list[ItemT]:
        """The items a run plays: cut to their first ``max_periods`` periods and ``max_questions`` questions where
        the environment's items have several of each, and checked runnable (bad ones are a ``UserInputError``
        naming ``source``). The base plays items as they were read."""
        return items

    def item_split(self, item: ItemT) -> str | None:
        """The split the benchmark itself puts the item in ('train', 'test', ...), None when it has none; a
        config's split is drawn over the items either way."""
        return None

    @abstractmethod
    def n_periods(self, item: ItemT) -> int:
        """The item's question points: an episode has finished once it holds this many periods."""

    @abstractmethod
    def questions(self, item: ItemT, period: int) -> list[QuestionView]:
        """The questions asked at the end of ``period``, in index order."""

    def categories(self, item: ItemT) -> dict[int, str]:
        """Question index -> category, over every period (empty when the benchmark has none)."""
        return {q.index: q.category for period in range(self.n_periods(item))
                for q in self.questions(item, period) if q.category is not None}

    # -- playing ---------------------------------------------------------------------------------------------------

    @abstractmethod
    async def run_item(
        self,
        agent: MemoryAgent,
        item: ItemT,
        sessions: SessionSource | None,
        run: ItemRun = PLAIN_RUN,
    ) -> EpisodeResult:
        """One agent through one item: each period's sessions (live with the simulator in ``sessions``; replayed
        from a recorded run in ``sessions``; or, off-policy environments with ``sessions`` None, from the item's
        own), then the period's questions against the frozen state, each ``QARecord`` scored by ``score_answer``.
        With ``run.store``, finished periods are restored rather than replayed and each new one is saved as it
        ends, so a killed run resumes per period; ``run.traces`` False returns periods ``without_traces``."""

    def chain_length(self, item: ItemT) -> int:
        """The calls a user makes in order (orders users longest first; an estimate is enough)."""
        return self.n_periods(item)

    def judged(self, item: ItemT) -> bool:
        """Whether scoring the item's answers asks the LLM judge (runs check for one before any call)."""
        return False

    # -- scoring ---------------------------------------------------------------------------------------------------

    @abstractmethod
    async def score_answer(self, item: ItemT, period: int, question: QuestionView, reply: str) -> AnswerScore:
        """Score the agent's answer to ``question``: the 1-based option number it chose (as text) for multiple
        choice, its reply text otherwise."""

    # -- evidence ----------------------------------------------------------------------------------------------------

    def feedback(self, result: PeriodResult, item: ItemT, config: FeedbackConfig) -> PeriodFeedback:
        """What the proposer may read about one period, in the configured mode (see the module docstring for the
        leak guarantee). The base builds it from ``questions`` and the records; an environment adds what only it
        knows (AMemGym: the state updates the user revealed)."""
        memories: list[str] = []
        records: list[FeedbackRecord] = []
        if config.mode is not FeedbackMode.none:
            views = {view.index: view for view in self.questions(item, result.period)}
            for record in sorted(result.qa, key=lambda r: r.question_index):
                memory = result.consulted_memory(record)
                if memory not in memories:
                    memories.append(memory)
                records.append(feedback_record(record, views[record.question_index], config, memories.index(memory)))
        return PeriodFeedback(user_id=result.user_id, period=result.period, mode=config.mode, records=records,
                              memories=memories)


def feedback_record(record: QARecord, view: QuestionView, config: FeedbackConfig, memory_ref: int) -> FeedbackRecord:
    """One question's feedback: the question alone in ``question_only`` mode; in ``complete`` mode also the
    lettered options and the chosen letter (multiple choice) or the agent's reply (free text); the gold answer and
    the outcome only ``with_ground_truth``."""
    if config.mode is FeedbackMode.question_only:
        return FeedbackRecord(question=view.query, question_index=view.index, memory_ref=memory_ref)
    if view.choices is not None:
        choices = [f"({letter(i)}) {text}" for i, text in enumerate(view.choices)]
        chosen = "none (unreadable reply)" if record.choice is None else letter(record.choice - 1)
        gold = None if view.gold_choice is None else letter(view.gold_choice - 1)
    else:
        choices = None
        chosen = record.answer if record.answer is not None else "none (unreadable reply)"
        gold = view.gold
    shown = config.with_ground_truth
    return FeedbackRecord(
        question=view.query, question_index=view.index, choices=choices, agent_choice=chosen,
        ground_truth=gold if shown else None, correct=record.correct if shown else None, memory_ref=memory_ref,
    )
