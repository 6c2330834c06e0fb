"""The off-policy base of the conversation benchmarks (LoCoMo, LongMemEval, MemoryAgentBench, MemoryBench): the
agent ingests an item's fixed sessions in order, then answers its questions, each scored by the question's method.

A benchmark module only reads its files into ``ReplayItem``s (``load_items``) and, where its official scorer
differs, overrides ``score_answer``, ``answer_prompt`` or ``choice_prompt``. An item is one period (its questions
come after its last session), played through ``runner.run_periods``, so it is saved when done and a killed run
resumes per item.
A session's messages reach the agent as (user, assistant) exchanges through ``ingest``; a message without its
partner is paired with an empty one, so monologues and two-person chats both fit.

Free-text questions ask for a short phrase, as the benchmarks' own QA prompts do. Multiple-choice questions are
answered in the run's answer mode (``environments.answering``): likelihood on the embedded model, where the
options are scored as replies and never listed in the prompt, else the model names an option number.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any, ClassVar, cast

from pydantic import Field

from memevo.agents.base import MemoryAgent
from memevo.agents.llm.protocol import Message
from memevo.core.errors import RunFailedError, UserInputError
from memevo.core.lazy_model import LazyModel
from memevo.environments.answer_scores import exact_match, judge_answer, token_f1
from memevo.environments.answering import AgentResponder, answer_chooser, check_answer_mode, resolve_answer_mode
from memevo.environments.capabilities import Capabilities
from memevo.environments.item_checks import check_items
from memevo.environments.item_run import PLAIN_RUN, ItemRun
from memevo.environments.protocol import AnswerScore, Environment, QuestionView
from memevo.environments.qa import AnswerMode, ChoiceOutcome, parse_choice
from memevo.environments.records import EpisodeResult, PeriodResult, QARecord, ScoringMethod, remember
from memevo.environments.runner import PeriodPlan, SessionSource, Transcript, run_periods


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
    abstention: bool = Field(default=False, description="Unanswerable from the sessions: the credit is for saying so.")
    reference: dict[str, Any] = Field(
        {}, exclude_if=lambda value: not value,
        description="What the benchmark's own scorer reads beyond ``gold`` (MemoryBench's ``info``, MemoryAgentBench's "
        "answer list), kept in the item so that scoring depends on the item alone, not on the object that read it; left "
        "out of dumps when empty, so the other benchmarks' item fingerprints (resume checks) stay as they were.")


class ReplayItem(LazyModel):
    """One benchmark item: sessions to ingest, then questions."""

    id: str
    sessions: list[ReplaySession] = Field(min_length=1)
    questions: list[ReplayQuestion]
    split: str | None = Field(default=None, description="The benchmark's own split of this item, if it has one.")


SHORT_ANSWER_REQUEST = "From our conversations, answer this question with a short phrase (a few words):"
"""Put before the question: a small model asked the question first and the format after answers in the voice of the
transcript instead (the embedded model did on LoCoMo)."""
CHOICE_INSTRUCTION = 'Reply with nothing except a JSON object of the form {"answer": <option number>}.'
CLOZE_INSTRUCTION = "Answer from what you remember of our conversations."


class ReplayEnvironment(Environment[ReplayItem]):
    """Off-policy benchmarks: ``load_items`` is the one method a benchmark must write."""

    capabilities: ClassVar[Capabilities] = Capabilities(sessions="off_policy", answers="free_text", categories=True)
    calibration_prompt: ClassVar[str | None] = None
    """Set: likelihood answers are calibrated by each option's likelihood as the reply to this content-free prompt
    (``answering.LikelihoodAnswers``)."""

    id_field: ClassVar[str] = "id"
    """The field of the benchmark's records that holds an item's id, named when an id is refused."""

    def item_id(self, item: ReplayItem) -> str:
        return item.id

    def prepared(self, items: list[ReplayItem], *, max_periods: int | None = None, max_questions: int | None = None,
                 source: str) -> list[ReplayItem]:
        """The items as read, once they pass ``item_checks`` (the checks ``memevo env validate`` lists)."""
        check_items(items, source=source, id_field=self.id_field)
        return items

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
                                      choices=question.choices, gold=question.gold, gold_choice=gold_choice,
                                      scoring=question.scoring))
        return views

    def chain_length(self, item: ReplayItem) -> int:
        return sum(len(session.exchanges()) for session in item.sessions) + 1

    def judged(self, item: ReplayItem) -> bool:
        return any(question.scoring == "llm_judge" for question in item.questions)

    def answer_prompt(self, question: QuestionView) -> str:
        """The prompt a free-text question is asked with: a request for a short phrase, then the question."""
        return short_answer_prompt(question.query)

    def choice_prompt(self, question: QuestionView, mode: AnswerMode) -> str:
        """The prompt a multiple-choice question is asked with: the options numbered when the model names one
        (generated), none when each option's text is scored as the reply (likelihood)."""
        if mode == "likelihood":
            return f"{question.query}\n\n{CLOZE_INSTRUCTION}"
        options = "\n".join(f"{number}: {text}" for number, text in enumerate(question.choices or [], start=1))
        return f"{question.query}\n\nOptions:\n{options}\n\n{CHOICE_INSTRUCTION}"

    async def score_answer(self, item: ReplayItem, period: int, question: QuestionView, reply: str) -> AnswerScore:
        """By the question's ``scoring``: the option number the reply names (a bare number or ``{"answer": N}``),
        or the reply text against the gold."""
        method = item.questions[question.index].scoring
        if method == "choice":
            chosen = option_number(reply, len(question.choices or []))
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

    async def score_unread_choice(self, item: ReplayItem, question: QuestionView, reply: str) -> AnswerScore:
        """A multiple-choice reply that names no option: no credit. A benchmark whose own scorer reads such replies
        (LoCoMo's adversarial rule) scores the text here."""
        return AnswerScore(score=0.0, method="choice", correct=False, detail="unreadable choice")

    async def run_item(
        self,
        agent: MemoryAgent,
        item: ReplayItem,
        sessions: SessionSource | None,
        run: ItemRun = PLAIN_RUN,
    ) -> EpisodeResult:
        if sessions is not None:
            raise UserInputError(f"environment '{self.name}' replays its own sessions; it takes no user simulator "
                                 "or recorded run", field="sessions")
        check_answer_mode(self.episode.answer_mode, agent.llm)
        user_id = run.user_id or item.id
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

        return await run_periods(agent, plan, play, examine, store=run.store, user_id=user_id,
                                 after_period=run.after_period, on_period=run.on_period, traces=run.traces)

    async def _examine(self, agent: MemoryAgent, item: ReplayItem, user_id: str,
                       transcripts: list[Transcript]) -> PeriodResult:
        """Every question against the frozen state, concurrently, each scored."""
        frozen = agent.state() if self.episode.check_frozen_state else None
        last = item.sessions[-1].time
        memories: dict[str, str] = {}

        async def one(view: QuestionView) -> QARecord:
            now = item.questions[view.index].asked_at or last
            if view.choices is not None:
                return await self._choice_record(agent, item, user_id, view, now, memories)
            prompt = self.answer_prompt(view)
            reply = await agent.answer(prompt, query=view.query, now=now)
            scored = await self.score_answer(item, 0, view, reply.text)
            return QARecord(
                user_id=user_id, period=0, question_index=view.index, prompt=prompt, raw_reply=reply.text,
                choice=None, gold=None, n_choices=0, correct=scored.correct,
                memory_id=remember(memories, reply.consulted_memory), scoring=scored.method, score=scored.score,
                answer=reply.text.strip(), gold_answer=view.gold, category=view.category,
                abstention=item.questions[view.index].abstention,
            )

        qa = list(await asyncio.gather(*(one(view) for view in self.questions(item, 0))))
        if frozen is not None and agent.state() != frozen:
            raise RunFailedError(f"agent kind '{agent.policy.kind}' changed its state while answering questions "
                                 f"(user {user_id}); answer() must not change state")
        return PeriodResult(user_id=user_id, period=0, transcripts=transcripts, qa=qa, memories=memories)

    async def _choice_record(self, agent: MemoryAgent, item: ReplayItem, user_id: str, view: QuestionView,
                             now: datetime, memories: dict[str, str]) -> QARecord:
        """A multiple-choice question answered in the run's answer mode, then scored from the chosen number, or by
        ``score_unread_choice`` when no reply named one."""
        episode = self.episode
        mode = resolve_answer_mode(episode.answer_mode, agent.llm, amemgym_compat=episode.amemgym_compat)
        prompt = self.choice_prompt(view, mode)
        chooser = answer_chooser(mode, constrained=episode.constrained_answers,
                                 calibration_prompt=self.calibration_prompt)
        outcome: ChoiceOutcome = await chooser.choose_among(
            AgentResponder(agent, query=view.query, now=now), prompt, list(view.choices or []),
            amemgym_compat=episode.amemgym_compat, rng_key=(episode.seed, user_id, 0, view.index))
        last_reply = outcome.retry_reply if outcome.retry_reply is not None else outcome.raw_reply
        scored = await (self.score_answer(item, 0, view, str(outcome.choice)) if outcome.choice is not None
                        else self.score_unread_choice(item, view, last_reply))
        return QARecord(
            user_id=user_id, period=0, question_index=view.index, prompt=prompt, gold=view.gold_choice,
            n_choices=len(view.choices or []), correct=scored.correct, scoring=scored.method,
            memory_id=remember(memories, outcome.consulted_memory), category=view.category,
            abstention=item.questions[view.index].abstention, **outcome.model_dump(exclude={"consulted_memory"}),
        )


def short_answer_prompt(query: str) -> str:
    return f"{SHORT_ANSWER_REQUEST} {query}"


def option_number(reply: str, n_choices: int) -> int | None:
    """The 1-based option a reply names: a bare number, or a ``{"answer": N}`` object; None when it names none."""
    text = reply.strip()
    if text.isdigit():
        return int(text) if 1 <= int(text) <= n_choices else None
    return parse_choice(text, n_choices)
