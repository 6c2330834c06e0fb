"""The shape every benchmark environment here shares: read the user's files into items, replay an item's
sessions into the agent in order, ask its questions, score each reply, and aggregate per category.

Replay is off-policy: the recorded exchanges go to ``MemoryAgent.ingest`` and each session ends with
``end_session``, so every agent sees the same sessions whatever it answers.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import ClassVar

from memevo.agents.base import MemoryAgent
from memevo.environments.benchmarks.items import BenchItem, Question
from memevo.environments.benchmarks.judge import Judge
from memevo.environments.benchmarks.scores import QuestionScore, ScoreTable, by_category

NO_JUDGE = "needs the LLM judge (none configured)"


class BenchmarkEnvironment(ABC):
    """``name`` is the config's ``environment`` value; ``categories`` the benchmark's own reporting order."""

    name: ClassVar[str]
    categories: ClassVar[tuple[str, ...]] = ()

    def __init__(self, path: str | Path, *, judge: Judge | None = None, limit: int | None = None) -> None:
        self.path = Path(path)
        self.judge = judge
        self.limit = limit
        """Read only the first ``limit`` records (the rest of a streamed file is never read)."""
        self._items: list[BenchItem] | None = None

    def items(self) -> list[BenchItem]:
        """Every item, read once (errors name the file and the field)."""
        if self._items is None:
            self._items = self._load()
        return self._items

    async def run_item(self, agent: MemoryAgent, item: BenchItem) -> list[QuestionScore]:
        """Replay the item's sessions into ``agent``, then ask and score each question in order."""
        for session in item.sessions:
            for exchange in session.exchanges:
                await agent.ingest(exchange.user, exchange.assistant, session.when)
            await agent.end_session(session.when)
        scores = []
        for question in item.questions:
            answer = await agent.answer(question.prompt, query=question.question, now=question.asked_at)
            scores.append(await self.score(item, question, answer.text))
        return scores

    def summarise(self, scores: list[QuestionScore]) -> ScoreTable:
        return by_category(self.name, scores, order=self.categories)

    def warnings(self) -> list[str]:
        """Oddities in valid data that a user should know of (``memevo env validate`` prints them)."""
        return []

    @abstractmethod
    def _load(self) -> list[BenchItem]:
        """Read and validate the files; keep the gold answers in the environment, out of the items."""

    @abstractmethod
    async def score(self, item: BenchItem, question: Question, reply: str) -> QuestionScore:
        """One reply scored as the benchmark scores it."""

    async def judged(self, item: BenchItem, question: Question, reply: str, prompt: str) -> QuestionScore:
        """A yes/no judge verdict as a 0/1 accuracy score, unscored without a judge or with an unreadable verdict."""
        base = dict(item_id=item.item_id, question_id=question.question_id, category=question.category,
                    metric="judge accuracy", reply=reply)
        if self.judge is None:
            return QuestionScore(**base, value=None, na_reason=NO_JUDGE)
        verdict = await self.judge.verdict(prompt)
        if verdict.correct is None:
            return QuestionScore(**base, value=None, na_reason="judge reply said neither yes nor no")
        return QuestionScore(**base, value=float(verdict.correct))
