"""The off-policy base of the conversation benchmarks (LoCoMo, LongMemEval, MemoryAgentBench, MemoryBench): the
agent ingests an item's fixed sessions in order, then answers its questions, each scored by the question's method.

A benchmark module only reads its files into ``ReplayItem``s (``load_items``) and, where its official scorer
differs, overrides ``score_answer`` or ``answer_prompt``. An item is one period (its questions come after its last
session), played through ``runner.run_periods``, so it is saved when done and a killed run resumes per item.
A session's messages reach the agent as (user, assistant) exchanges through ``ingest``; a message without its
partner is paired with an empty one, so monologues and two-person chats both fit.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import ClassVar, cast

from pydantic import Field

from memevo.agents.base import MemoryAgent
from memevo.agents.errors import RunFailedError, UserInputError
from memevo.agents.lazy_model import LazyModel
from memevo.agents.llm.protocol import Message
from memevo.environments.answer_scores import exact_match, judge_answer, token_f1
from memevo.environments.protocol import AfterPeriod, AnswerScore, Environment, OnPeriod, QuestionView, Session
from memevo.environments.qa import parse_choice
from memevo.environments.records import EpisodeResult, PeriodResult, QARecord, ScoringMethod, remember
from memevo.environments.runner import PeriodPlan, SessionSource, Transcript, run_periods
from memevo.environments.store import RunStore


class ReplaySession(LazyModel):
    """One recorded conversation."""

    id: str = Field(description="The benchmark's session id (names it in errors).")
    time: datetime = Field(description="When the session took place (the agent's ``now``).")
    messages: list[dict[str, str]] = Field(description="{role: user|assistant, content} messages in order.")

    def exchanges(self) -> list[tuple[str, str]]:
        """(user, assistant) pairs in order; a message without its partner gets an empty one."""
        pairs: list[tuple[str, str]] = []
        pending: str | None = None
        for message in self.messages:
            if message.get("role") == "user":
                if pending is not None:
                    pairs.append((pending, ""))
                pending = message.get("content", "")
            else:
                pairs.append((pending or "", message.get("content", "")))
                pending = None
        if pending is not None:
            pairs.append((pending, ""))
        return pairs


class ReplayQuestion(LazyModel):
    """One question asked after the item's last session."""

    query: str
    gold: str = Field(description="The gold answer text (multiple choice: the gold option's text).")
    category: str | None = Field(default=None, description="The benchmark's category, for per-category reporting.")
    choices: list[str] | None = Field(default=None, description="Option texts of a multiple-choice question; None: free text.")
    scoring: ScoringMethod = Field(default="token_f1", description="How the answer is scored ('choice' for options).")
    asked_at: datetime | None = Field(default=None, description="The agent's ``now`` when asked; default: the last session's.")


class ReplayItem(LazyModel):
    """One benchmark item: sessions to ingest, then questions."""

    id: str
    sessions: list[ReplaySession] = Field(min_length=1)
    questions: list[ReplayQuestion]
    split: str | None = Field(default=None, description="The benchmark's own split of this item, if it has one.")


ANSWER_INSTRUCTION = "Answer from what you remember of our conversations. Reply with the answer only, in a few words."


class ReplayEnvironment(Environment[ReplayItem]):
    """Off-policy benchmarks: ``load_items`` is the one method a benchmark must write."""

    sessions: ClassVar[Session] = "off_policy"

    def item_id(self, item: ReplayItem) -> str:
        return item.id

    def item_split(self, item: ReplayItem) -> str | None:
        return item.split

    def n_periods(self, item: ReplayItem) -> int:
        return 1

    def questions(self, item: ReplayItem, period: int) -> list[QuestionView]:
        views = []
        for index, question in enumerate(item.questions):
            gold_choice = None
            if question.choices is not None:
                if question.gold not in question.choices:
                    raise UserInputError("the gold answer is not one of the choices", field=f"{item.id}.questions[{index}]")
                gold_choice = question.choices.index(question.gold) + 1
            views.append(QuestionView(index=index, query=question.query, category=question.category,
                                      choices=question.choices, gold=question.gold, gold_choice=gold_choice))
        return views

    def chain_length(self, item: ReplayItem) -> int:
        return sum(len(session.exchanges()) for session in item.sessions) + 1

    def answer_prompt(self, question: QuestionView) -> str:
        """The prompt a question is asked with: options numbered for multiple choice, else a short answer."""
        if question.choices is None:
            return f"{question.query}\n\n{ANSWER_INSTRUCTION}"
        options = "\n".join(f"{number}: {text}" for number, text in enumerate(question.choices, start=1))
        return (f"{question.query}\n\nOptions:\n{options}\n\n"
                'Reply with nothing except a JSON object of the form {"answer": <option number>}.')

    async def score_answer(self, item: ReplayItem, period: int, question: QuestionView, reply: str) -> AnswerScore:
        """By the question's ``scoring``: the option number in the reply, or the reply text against the gold."""
        method = item.questions[question.index].scoring
        if method == "choice":
            chosen = parse_choice(reply, len(question.choices or []))
            correct = chosen is not None and chosen == question.gold_choice
            return AnswerScore(score=float(correct), method=method, correct=correct,
                               detail=None if chosen is not None else "unreadable choice")
        if method == "llm_judge":
            if self.judge is None:
                raise UserInputError("this environment scores answers with an LLM judge: configure llm.judge",
                                     field="llm.judge")
            score, verdict = await judge_answer(self.judge, question.query, question.gold, reply)
            return AnswerScore(score=score, method=method, correct=score == 1.0, detail=verdict)
        score = exact_match(reply, question.gold) if method == "exact_match" else token_f1(reply, question.gold)
        return AnswerScore(score=score, method=method, correct=score == 1.0)

    async def run_item(
        self,
        agent: MemoryAgent,
        item: ReplayItem,
        sessions: SessionSource | None,
        *,
        store: RunStore | None = None,
        user_id: str | None = None,
        after_period: AfterPeriod | None = None,
        on_period: OnPeriod | None = None,
        traces: bool = True,
    ) -> EpisodeResult:
        if sessions is not None:
            raise UserInputError(f"environment '{self.name}' replays its own sessions; it takes no user simulator "
                                 "or recorded run", field="sessions")
        user_id = user_id or item.id
        plan = PeriodPlan(item_id=item.id, n_periods=1, protocol={"environment": self.name, **self.episode.protocol()},
                          calls_per_period=[self.chain_length(item)])

        async def play(period: int) -> list[Transcript]:
            transcripts: list[Transcript] = []
            for session in item.sessions:
                for user_message, assistant_message in session.exchanges():
                    await agent.ingest(user_message, assistant_message, session.time)
                await agent.end_session(session.time)
                transcripts.append([cast(Message, dict(message)) for message in session.messages])
            return transcripts

        async def examine(period: int, transcripts: list[Transcript]) -> PeriodResult:
            return await self._examine(agent, item, user_id, transcripts)

        return await run_periods(agent, plan, play, examine, store=store, user_id=user_id, after_period=after_period,
                                 on_period=on_period, traces=traces)

    async def _examine(self, agent: MemoryAgent, item: ReplayItem, user_id: str,
                       transcripts: list[Transcript]) -> PeriodResult:
        """Every question against the frozen state, concurrently, each scored."""
        frozen = agent.state() if self.episode.check_frozen_state else None
        last = item.sessions[-1].time
        memories: dict[str, str] = {}

        async def one(view: QuestionView) -> QARecord:
            question = item.questions[view.index]
            prompt = self.answer_prompt(view)
            reply = await agent.answer(prompt, query=view.query, now=question.asked_at or last)
            scored = await self.score_answer(item, 0, view, reply.text)
            multiple = view.choices is not None
            chosen = parse_choice(reply.text, len(view.choices or [])) if multiple else None
            return QARecord(
                user_id=user_id, period=0, question_index=view.index, prompt=prompt, raw_reply=reply.text,
                choice=chosen, gold=view.gold_choice, n_choices=len(view.choices or []), correct=scored.correct,
                format_error=multiple and chosen is None, memory_id=remember(memories, reply.consulted_memory),
                scoring=scored.method, score=None if multiple else scored.score,
                answer=None if multiple else reply.text.strip(), gold_answer=None if multiple else view.gold,
                category=view.category,
            )

        qa = list(await asyncio.gather(*(one(view) for view in self.questions(item, 0))))
        if frozen is not None and agent.state() != frozen:
            raise RunFailedError(f"agent kind '{agent.policy.kind}' changed its state while answering questions "
                                 f"(user {user_id}); answer() must not change state")
        return PeriodResult(user_id=user_id, period=0, transcripts=transcripts, qa=qa, memories=memories)
