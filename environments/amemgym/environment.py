"""AMemGym as an ``Environment``: simulated users whose state changes period by period, multiple-choice questions
after every period, played live with a user simulator or replayed from a recorded run.

Everything here delegates to the modules that ran AMemGym before the protocol existed (``data.io``, ``runner``,
``feedback``), so results are the same whether a caller goes through the protocol or not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from memevo.agents.base import MemoryAgent
from memevo.core.errors import UserInputError
from memevo.environments.amemgym.data.models import Item
from memevo.environments.capabilities import Capabilities
from memevo.environments.feedback import FeedbackConfig, PeriodFeedback, build_feedback
from memevo.environments.item_run import PLAIN_RUN, ItemRun
from memevo.environments.protocol import AnswerScore, Environment, QuestionView
from memevo.environments.records import EpisodeResult, PeriodResult
from memevo.environments.runner import SessionSource, period_plan, run_episode


class AMemGymEnvironment(Environment[Item]):
    """AMemGym-format items (``data.json``, a dataset folder, a synth world)."""

    name: ClassVar[str] = "amemgym"
    capabilities: ClassVar[Capabilities] = Capabilities(
        sessions="on_policy", answers="choice", upper_bound=True, random_baseline=True, no_memory_baseline=True,
        diagnosis=True, procedural_worlds=True, in_episode=True, amemgym_protocol=True)
    record_keys: ClassVar[frozenset[str]] = frozenset({"id", "start_time", "user_profile", "periods", "qas"})

    def load_items(self, source: str | Path, *, limit: int | None = None) -> list[Item]:
        from memevo.environments.amemgym.data.io import load_items
        from memevo.environments.formats import read_as

        with read_as(self.name, source):
            items = load_items(source)
        return items[:limit] if limit else items

    def prepared(self, items: list[Item], *, max_periods: int | None = None, max_questions: int | None = None,
                 source: str) -> list[Item]:
        from memevo.environments.amemgym.data.validate import check_runnable

        items = [truncate(item, max_periods, max_questions) for item in items]
        check_runnable(items, source=source)
        return items

    def item_id(self, item: Item) -> str:
        return item.id

    def n_periods(self, item: Item) -> int:
        return len(item.periods)

    def questions(self, item: Item, period: int) -> list[QuestionView]:
        state = item.periods[period].state
        views = []
        for index, question in enumerate(item.qas):
            gold = question.gold_index(state)
            views.append(QuestionView(index=index, query=question.query,
                                      choices=[choice.answer for choice in question.answer_choices],
                                      gold=question.answer_choices[gold].answer, gold_choice=gold + 1))
        return views

    async def run_item(
        self,
        agent: MemoryAgent,
        item: Item,
        sessions: SessionSource | None,
        run: ItemRun = PLAIN_RUN,
    ) -> EpisodeResult:
        if sessions is None:
            raise UserInputError("AMemGym items are played with a user simulator or replayed from a recorded run",
                                 field="sessions")
        return await run_episode(agent, item, sessions, self.episode, store=run.store, user_id=run.user_id,
                                 after_period=run.after_period, on_period=run.on_period, traces=run.traces)

    def chain_length(self, item: Item) -> int:
        return sum(period_plan(item, self.episode).calls_per_period)

    async def score_answer(self, item: Item, period: int, question: QuestionView, reply: str) -> AnswerScore:
        correct = reply.strip() == str(question.gold_choice)
        return AnswerScore(score=float(correct), method="choice", correct=correct)

    def feedback(self, result: PeriodResult, item: Item, config: FeedbackConfig) -> PeriodFeedback:
        """AMemGym's feedback (``environments.feedback``): its answer-letter option and the revealed state updates."""
        return build_feedback(result, item, config)


def truncate(item: Item, max_periods: int | None, max_questions: int | None) -> Item:
    """``item`` with its first ``max_periods`` periods and ``max_questions`` questions (None: all)."""
    update: dict[str, Any] = {}
    if max_periods is not None:
        update["periods"] = item.periods[:max_periods]
    if max_questions is not None:
        update["qas"] = item.qas[:max_questions]
    return item.model_copy(update=update) if update else item
