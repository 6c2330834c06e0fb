"""How a multiple-choice question gets its answer: the model names an option (generated) or each option's text is
scored by its likelihood as the reply (likelihood, cloze style).

A small model asked to name an option number mostly names the first one whatever it was told: a constrained
``{"answer": N}`` is the likelihood of a digit, not of the advice. Likelihood answers score the option texts
themselves, as the lm-evaluation-harness scores multiple choice for small models, with the options not listed
in the prompt, so their order cannot matter. The score is the log-probability per byte of the option's text
(the harness's ``acc_norm``): summed log-probabilities favour the shortest option, per-token ones depend on how
the tokenizer splits each text, per byte does neither.

An option a model prefers whatever it is asked (LoCoMo's "Not mentioned in the conversation") wins every such
comparison, so an environment can ask for calibrated likelihood: each option's log-probability as the reply
less its log-probability as the reply to a content-free prompt (the question left out) in the same context, the
pointwise mutual information of option and question that lm-evaluation-harness's ``acc_mutual_info`` scores.
The context keeps the memory: where the wrong option is itself taken from the conversation (LoCoMo's
adversarial answers), a prior without memory credits forgetting.

The agent's answer step, the upper bound and the no-memory baseline all go through an ``AnswerChooser``; only
memevo's embedded model can score options, so ``auto`` means likelihood there and generated anywhere else (and
always under ``amemgym_compat``, which reproduces AMemGym's generated answers).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import datetime
from typing import Any, ClassVar, Literal, Protocol

from memevo.agents.base import AgentAnswer, MemoryAgent, ScoredOptions
from memevo.agents.llm.protocol import ChatClient, LikelihoodClient, Message, OptionLogprob, Role
from memevo.core.errors import UserInputError
from memevo.environments.amemgym.data.models import Question
from memevo.environments.qa import (
    AnswerMode,
    ChoiceOutcome,
    QuestionPrompts,
    answer_schema,
    ask_choice,
    build_cloze_prompt,
    build_cloze_upper_bound_prompt,
    build_qa_prompt,
    build_upper_bound_prompt,
)

AnswerModeSetting = Literal["auto", "generated", "likelihood"]

ANSWER_MODE_TEXT: dict[str, str] = {
    "generated": "generated (the model names an option number)",
    "likelihood": "likelihood (each option's text scored by its log-probability per byte as the reply)",
    "calibrated_likelihood": "calibrated likelihood (each option's log-probability as the reply less its "
                             "log-probability with the question left out of the prompt)",
}
"""What a summary says about how answers were given."""


def resolve_answer_mode(setting: AnswerModeSetting, llm: ChatClient, *, amemgym_compat: bool) -> AnswerMode:
    """``auto``: likelihood when ``llm`` can score options (the embedded model) and not in AMemGym compat mode,
    else generated; an explicit mode is taken as given."""
    if setting != "auto":
        return setting
    scores = isinstance(llm, LikelihoodClient) and llm.likelihood_available
    return "likelihood" if scores and not amemgym_compat else "generated"


def check_answer_mode(setting: AnswerModeSetting, llm: ChatClient) -> None:
    """Refuse ``likelihood`` answers on a client whose endpoint says it cannot score options (any but memevo's
    embedded model), when an item starts: before its first request, not after its sessions were played."""
    if setting == "likelihood" and isinstance(llm, LikelihoodClient) and not llm.likelihood_available:
        raise UserInputError("likelihood answers need option likelihoods, which only memevo's embedded model gives; "
                             "this endpoint cannot: use 'generated' (or 'auto')", field="episode.answer_mode")


class Responder(Protocol):
    """Whoever answers: an agent (with its memory) or the bare LLM (upper bound, no-memory baseline)."""

    async def reply(self, prompt: str, json_schema: dict[str, Any] | None) -> AgentAnswer:
        """A generated reply to ``prompt``."""
        ...

    async def score(self, prompt: str, options: list[str]) -> ScoredOptions:
        """Each option's log-probability as the reply to ``prompt``."""
        ...


class AgentResponder:
    """An agent answering one question at ``now``, from its memory (``query`` is the bare question)."""

    def __init__(self, agent: MemoryAgent, *, query: str, now: datetime) -> None:
        self.agent, self.query, self.now = agent, query, now

    async def reply(self, prompt: str, json_schema: dict[str, Any] | None) -> AgentAnswer:
        return await self.agent.answer(prompt, query=self.query, now=self.now, json_schema=json_schema)

    async def score(self, prompt: str, options: list[str]) -> ScoredOptions:
        return await self.agent.score_options(prompt, options, query=self.query, now=self.now)


class BareResponder:
    """The bare LLM, asked in one user message; ``json_mode`` asks generated replies in plain JSON mode when no
    schema is given."""

    def __init__(self, llm: ChatClient, *, role: Role, json_mode: bool) -> None:
        self.llm, self.role, self.json_mode = llm, role, json_mode

    async def reply(self, prompt: str, json_schema: dict[str, Any] | None) -> AgentAnswer:
        reply = await self.llm.chat(self._messages(prompt), role=self.role, json_schema=json_schema,
                                    json_mode=self.json_mode)
        return AgentAnswer(text=reply.text)

    async def score(self, prompt: str, options: list[str]) -> ScoredOptions:
        if not isinstance(self.llm, LikelihoodClient):
            raise UserInputError("this LLM cannot score options by likelihood: use answer_mode 'generated'",
                                 field="answer_mode")
        return ScoredOptions(scores=await self.llm.option_logprobs(self._messages(prompt), options, role=self.role))

    @staticmethod
    def _messages(prompt: str) -> list[Message]:
        return [{"role": "user", "content": prompt}]


class AnswerChooser(ABC):
    """Writes the question prompts of one answer mode and picks an option with them."""

    mode: ClassVar[AnswerMode]

    @abstractmethod
    def qa_prompt(self, question: Question, prompts: QuestionPrompts | None) -> str:
        """The question as the agent (and the no-memory baseline) sees it."""

    @abstractmethod
    def upper_bound_prompt(self, question: Question, state: dict[str, str], prompts: QuestionPrompts | None) -> str:
        """The question with the relevant true state spelled out."""

    async def choose(self, responder: Responder, prompt: str, question: Question, *, amemgym_compat: bool,
                     rng_key: Sequence[object]) -> ChoiceOutcome:
        """The option ``responder`` picks for ``prompt``."""
        options = [choice.answer for choice in question.answer_choices]
        return await self.choose_among(responder, prompt, options, amemgym_compat=amemgym_compat, rng_key=rng_key)

    @abstractmethod
    async def choose_among(self, responder: Responder, prompt: str, options: list[str], *, amemgym_compat: bool,
                           rng_key: Sequence[object]) -> ChoiceOutcome:
        """The option among ``options`` (their texts, in order) that ``responder`` picks for ``prompt``: any
        environment's multiple-choice question goes through here."""


class GeneratedAnswers(AnswerChooser):
    """The model replies ``{"answer": N}`` (with the answer's JSON schema when ``constrained``), read strictly,
    retried once (``qa.ask_choice``)."""

    mode = "generated"

    def __init__(self, *, constrained: bool) -> None:
        self.constrained = constrained

    def qa_prompt(self, question: Question, prompts: QuestionPrompts | None) -> str:
        return build_qa_prompt(question, prompts)

    def upper_bound_prompt(self, question: Question, state: dict[str, str], prompts: QuestionPrompts | None) -> str:
        return build_upper_bound_prompt(question, state, prompts)

    async def choose_among(self, responder: Responder, prompt: str, options: list[str], *, amemgym_compat: bool,
                           rng_key: Sequence[object]) -> ChoiceOutcome:
        n_choices = len(options)
        schema = answer_schema(n_choices) if self.constrained else None
        return await ask_choice(lambda text: responder.reply(text, schema), prompt, n_choices,
                                amemgym_compat=amemgym_compat, rng_key=rng_key)


class LikelihoodAnswers(AnswerChooser):
    """Every option's text is scored as the reply; the highest log-probability per byte is the choice, or, with a
    ``calibration_prompt``, the highest log-probability less the option's own as the reply to that content-free
    prompt, asked of the same responder (so with the same memory)."""

    mode = "likelihood"

    def __init__(self, *, calibration_prompt: str | None = None) -> None:
        self.calibration_prompt = calibration_prompt

    def qa_prompt(self, question: Question, prompts: QuestionPrompts | None) -> str:
        _own_wording(prompts)
        return build_cloze_prompt(question)

    def upper_bound_prompt(self, question: Question, state: dict[str, str], prompts: QuestionPrompts | None) -> str:
        _own_wording(prompts)
        return build_cloze_upper_bound_prompt(question, state)

    async def choose_among(self, responder: Responder, prompt: str, options: list[str], *, amemgym_compat: bool,
                           rng_key: Sequence[object]) -> ChoiceOutcome:
        scored = await responder.score(prompt, options)
        if self.calibration_prompt is None:
            key = "logprob_per_byte"
            values = [per_byte_score(score, option) for score, option in zip(scored.scores, options, strict=True)]
        else:
            key = "pointwise_mutual_information"
            prior = await responder.score(self.calibration_prompt, options)
            values = [score.logprob - alone.logprob for score, alone in zip(scored.scores, prior.scores, strict=True)]
        choice = max(range(len(options)), key=values.__getitem__) + 1
        reply = json.dumps({"answer": choice, key: [round(value, 4) for value in values]})
        return ChoiceOutcome(choice=choice, raw_reply=reply, consulted_memory=scored.consulted_memory,
                             answer_mode="likelihood" if self.calibration_prompt is None else "calibrated_likelihood")


def per_byte_score(score: OptionLogprob, option: str) -> float:
    """The option's log-probability divided by its length in UTF-8 bytes."""
    return score.logprob / max(1, len(option.encode("utf-8")))


def _own_wording(prompts: QuestionPrompts | None) -> None:
    if prompts is not None:
        raise UserInputError("likelihood answers use memevo's own question wording; AMemGym's prompt templates "
                             "ask for an option number (use answer_mode 'generated' with them)", field="answer_mode")


def answer_chooser(mode: AnswerMode, *, constrained: bool, calibration_prompt: str | None = None) -> AnswerChooser:
    """The chooser of ``mode`` (``constrained`` matters to generated answers only, ``calibration_prompt`` to
    likelihood ones)."""
    if mode == "likelihood":
        return LikelihoodAnswers(calibration_prompt=calibration_prompt)
    return GeneratedAnswers(constrained=constrained)
