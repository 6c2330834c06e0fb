"""The memory-agent contract: what the episode runner calls and what evolution may change."""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import datetime
from typing import Any, ClassVar

from pydantic import ConfigDict

from memevo.agents.llm.protocol import ChatClient, LikelihoodClient, Message, OptionLogprob, Role
from memevo.agents.policy import MemoryPolicy
from memevo.core.errors import UserInputError
from memevo.core.lazy_model import LazyModel

HYPERPARAMETERS = ("update_every", "short_term", "top_k")


class ComponentSpec(LazyModel):
    """One evolvable prompt component of an agent kind and the rules a proposed text must keep."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    default: str
    required_placeholders: tuple[str, ...] = ()
    optional_placeholders: tuple[str, ...] = ()
    """Placeholders the agent also fills when present; any other ``{name}`` in a text is a mistake."""
    output_format_clause: str | None = None
    """A phrase the text must keep verbatim (it tells the LLM the reply format); None if free."""

    @property
    def placeholders(self) -> frozenset[str]:
        """Every placeholder the agent fills in this component."""
        return frozenset((*self.required_placeholders, *self.optional_placeholders))


class AgentSpec(LazyModel):
    """What an agent kind declares about itself, so the optimizer knows what it may evolve."""

    model_config = ConfigDict(frozen=True)

    kind: str
    description: str
    components: tuple[ComponentSpec, ...] = ()
    hyperparameters: tuple[str, ...] = ()

    def component(self, name: str) -> ComponentSpec:
        for component in self.components:
            if component.name == name:
                return component
        known = ", ".join(c.name for c in self.components) or "none"
        raise KeyError(f"agent kind '{self.kind}' has no prompt component '{name}' (known: {known})")


class AgentAnswer(LazyModel):
    """The reply to a question, with the memory text the agent consulted (feedback needs it)."""

    text: str
    consulted_memory: str = ""


class ScoredOptions(LazyModel):
    """Each option's log-probability as the agent's reply, with the memory text the agent consulted."""

    scores: list[OptionLogprob]
    consulted_memory: str = ""


class MemoryAgent(ABC):
    """An assistant with long-term memory, driven by the episode runner.

    Simulated time arrives explicitly as ``now`` on every call. ``answer`` must not change state.
    ``state``/``load_state`` round-trip exactly through JSON-serializable dicts.
    """

    spec: ClassVar[AgentSpec]

    def __init__(self, policy: MemoryPolicy, llm: ChatClient) -> None:
        self.policy = policy
        self.llm = llm

    def prompt(self, name: str) -> str:
        """The policy's text for a component, else the kind's default."""
        return self.policy.prompts.get(name, self.spec.component(name).default)

    @abstractmethod
    async def respond(self, message: str, now: datetime) -> str:
        """Reply to one user message and update memory."""

    @abstractmethod
    async def answer(
        self, prompt: str, *, query: str, now: datetime, json_schema: dict[str, Any] | None = None,
        role: Role = "agent",
    ) -> AgentAnswer:
        """Answer an evaluation prompt without changing state; ``query`` is the bare question, ``role``
        books the call (``probe`` for diagnosis probes).

        With ``json_schema``, the LLM must be asked with that schema (constrained decoding, so small
        models stay in the answer format); the reply text is still returned raw for the caller to parse.
        """

    async def score_options(self, prompt: str, options: list[str], *, query: str, now: datetime,
                            role: Role = "agent") -> ScoredOptions:
        """How likely each option's text is as the reply to ``prompt``, seen as ``answer`` would see it (likelihood
        answers); without changing state. Kinds whose reply context this base cannot see do not offer it."""
        raise UserInputError(f"agent kind '{self.policy.kind}' cannot answer by likelihood: use answer_mode "
                             "'generated'", field="answer_mode")

    async def score_in_context(self, messages: list[Message], options: list[str], role: Role) -> list[OptionLogprob]:
        """Each option scored as the reply to ``messages`` by this agent's LLM, which must offer likelihoods."""
        if not isinstance(self.llm, LikelihoodClient) or not self.llm.likelihood_available:
            raise UserInputError("this agent's LLM endpoint cannot score options by likelihood (only memevo's "
                                 "embedded model can): use answer_mode 'generated'", field="answer_mode")
        return await self.llm.option_logprobs(messages, options, role=role)

    @abstractmethod
    async def end_session(self, now: datetime) -> None:
        """A conversation ended; flush pending messages if the policy says so."""

    @abstractmethod
    async def ingest(self, user_message: str, assistant_message: str, now: datetime) -> None:
        """Take in one recorded exchange without replying (off-policy replay)."""

    @abstractmethod
    def state(self) -> dict[str, Any]:
        """The complete state as JSON-serializable data."""

    @abstractmethod
    def load_state(self, state: dict[str, Any]) -> None:
        """Restore a state produced by ``state``."""
