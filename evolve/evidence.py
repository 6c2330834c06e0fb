"""The proposer's evidence: a structured reflective dataset from a candidate's episodes, rendered to a budget.

The dataset holds, per (user, period, question), what the feedback mode allows, as the run's environment builds
it (``Environment.feedback``; AMemGym's is ``environments.feedback``): the question, and in complete mode the
choices and the chosen letter (a free-text question: the agent's answer), with ground truth the gold answer and
the outcome, and the memory the agent consulted; AMemGym with ``with_exposed_states`` adds the period's state
updates.
Every prompt component reads the same dataset: in a memory agent every answer depends on what each
component wrote or retrieved, so there is no per-component slice of the traces to take.

Rendering never cuts a blind prefix. It fills a token budget by a stratified choice: round by round, each
(user, period) in turn adds its next question, failures first where the outcome is shown. Within a (user,
period) the questions are offered from a starting question that moves on with each (user, period): a period
shows a few questions when the budget is tight, and without the rotation every period would show the same
first few, so what the later questions ask about would never reach the proposer. The rotation depends only on
positions, never on outcomes, so in question-only mode the choice reveals nothing the mode hides. A consulted
memory appears once per (user, period), clipped to its share of the budget. What did not fit is stated at the
end. Tokens are counted with tiktoken's ``cl100k_base`` encoding, read offline from the copy litellm (a DSPy
dependency) ships, without importing litellm; the proposer's own tokenizer is not at hand for every endpoint,
and cl100k is litellm's default for unknown models too. Where that copy is missing, tokens are estimated at
four characters each (tiktoken would otherwise try to download it).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import tiktoken

from memevo.core.lazy_model import LazyModel
from memevo.environments.amemgym.environment import AMemGymEnvironment
from memevo.environments.feedback import FeedbackConfig, FeedbackRecord, PeriodFeedback, render_feedback
from memevo.environments.protocol import Environment
from memevo.environments.records import EpisodeResult, PeriodResult
from memevo.environments.runner import EpisodeConfig

CHARS_PER_TOKEN = 4
MIN_MEMORY_TOKENS = 40
MAX_USERS_NAMED = 10


ENCODING = "cl100k_base"
ENCODING_URL = f"https://openaipublic.blob.core.windows.net/encodings/{ENCODING}.tiktoken"


def approx_tokens(text: str) -> int:
    """Estimated tokens of ``text`` when no tokenizer is at hand (see the module docstring)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


@functools.cache
def bundled_encoding() -> tiktoken.Encoding | None:
    """``cl100k_base`` from litellm's bundled tiktoken files, or None when they are not installed.

    tiktoken names its cached files by the SHA-1 of their URL and checks their SHA-256 on load; the
    cache folder is pointed at litellm's copy only for this one load, so nothing is downloaded.
    """
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(spec.submodule_search_locations[0]) / "litellm_core_utils" / "tokenizers"
    if not (folder / hashlib.sha1(ENCODING_URL.encode()).hexdigest()).is_file():
        return None
    previous = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
    try:
        return tiktoken.get_encoding(ENCODING)
    finally:
        if previous is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = previous


def count_tokens(text: str) -> int:
    """Tokens of ``text``: counted when the encoding is at hand, else estimated."""
    encoding = bundled_encoding()
    if encoding is None:
        return approx_tokens(text)
    return len(encoding.encode(text, disallowed_special=()))


class Evidence(LazyModel):
    """The reflective dataset of one candidate: one ``PeriodFeedback`` per (user, period) with questions."""

    periods: list[PeriodFeedback] = []

    @property
    def n_questions(self) -> int:
        return sum(len(period.records) for period in self.periods)


def evidence_from_episodes(
    episodes: Sequence[EpisodeResult], items: dict[str, Any], config: FeedbackConfig,
    environment: Environment[Any] | None = None,
) -> Evidence:
    """Every period of every episode, in the configured feedback mode, as ``environment`` (default AMemGym) builds
    it."""
    return evidence_from_periods([p for episode in episodes for p in episode.periods], items, config, environment)


def evidence_from_periods(periods: Sequence[PeriodResult], items: dict[str, Any], config: FeedbackConfig,
                          environment: Environment[Any] | None = None) -> Evidence:
    source = environment or AMemGymEnvironment(EpisodeConfig())
    built = [source.feedback(period, items[period.user_id], config) for period in periods]
    return Evidence(periods=[feedback for feedback in built if feedback.records])


def _priority(feedback: PeriodFeedback, stratum: int, strata: int) -> list[int]:
    """Record positions in the order they are offered: from this stratum's starting question on, failures first
    when the outcome is shown. The start moves on by one question per stratum, or by an even share of the
    questions when there are fewer strata than questions; a tight budget that fills in the first strata still
    sees different questions."""
    n = len(feedback.records)
    start = stratum * max(1, n // strata) % n
    order = [(start + i) % n for i in range(n)]
    return sorted(order, key=lambda i: feedback.records[i].correct is not False)


def _clip(text: str, max_tokens: int) -> str:
    encoding = bundled_encoding()
    if encoding is None:
        limit = max_tokens * CHARS_PER_TOKEN
        if len(text) <= limit:
            return text
        kept = text[:limit]
    else:
        tokens = encoding.encode(text, disallowed_special=())
        if len(tokens) <= max_tokens:
            return text
        kept = encoding.decode(tokens[:max_tokens])
    return kept.rstrip() + " … (memory cut for the budget)"


def _subset(feedback: PeriodFeedback, chosen: Sequence[int], memory_tokens: int) -> PeriodFeedback:
    """The period's feedback with only the chosen records (in question order) and their memories."""
    records: list[FeedbackRecord] = []
    memories: list[str] = []
    for index in sorted(chosen):
        record = feedback.records[index]
        ref = None
        if record.memory_ref is not None:
            text = _clip(feedback.memories[record.memory_ref], memory_tokens)
            if text not in memories:
                memories.append(text)
            ref = memories.index(text)
        records.append(record.model_copy(update={"memory_ref": ref}))
    return feedback.model_copy(update={"records": records, "memories": memories})


def _block(feedback: PeriodFeedback) -> str:
    return f"## User {feedback.user_id}, period {feedback.period}\n" + render_feedback(feedback)


def render_evidence(evidence: Evidence, max_tokens: int, count: Callable[[str], int] = count_tokens) -> str:
    """The evidence as the proposer reads it, within ``max_tokens`` (see the module docstring)."""
    if not evidence.periods:
        return "No feedback."
    strata = evidence.periods
    memory_tokens = max(MIN_MEMORY_TOKENS, max_tokens // (2 * len(strata)))
    queues = [_priority(feedback, s, len(strata)) for s, feedback in enumerate(strata)]
    chosen: list[list[int]] = [[] for _ in strata]
    costs = [0] * len(strata)
    budget = max_tokens - _reserve(evidence, max_tokens, count)
    for round_index in range(max(len(queue) for queue in queues)):
        for s, feedback in enumerate(strata):
            if round_index >= len(queues[s]):
                continue
            trial = chosen[s] + [queues[s][round_index]]
            cost = count(_block(_subset(feedback, trial, memory_tokens)))
            if sum(costs) - costs[s] + cost <= budget:
                chosen[s], costs[s] = trial, cost
    blocks = [_block(_subset(feedback, c, memory_tokens)) for feedback, c in zip(strata, chosen, strict=True) if c]
    return (_header(evidence, sum(len(c) for c in chosen)) + "\n".join(blocks)
            + _omission_note(evidence, chosen, max_tokens))


def _header(evidence: Evidence, shown: int) -> str:
    users = {feedback.user_id for feedback in evidence.periods}
    return (f"Evidence from {len(users)} user(s), {len(evidence.periods)} (user, period) pair(s): "
            f"{shown} of {evidence.n_questions} questions shown.\n\n")


def _reserve(evidence: Evidence, max_tokens: int, count: Callable[[str], int]) -> int:
    """The most the header and the closing note can take: both written as if every question were left out. Kept
    to what they need, so a small budget is spent on questions (a fixed allowance left none for one question's
    block in the quickstart, and the proposer wrote blind)."""
    nothing: list[list[int]] = [[] for _ in evidence.periods]
    return count(_header(evidence, evidence.n_questions)) + count(_omission_note(evidence, nothing, max_tokens))


def _omission_note(evidence: Evidence, chosen: list[list[int]], max_tokens: int) -> str:
    """What the budget left out, in a size that does not grow with the number of periods."""
    left = evidence.n_questions - sum(len(c) for c in chosen)
    if not left:
        return ""
    empty = sum(1 for c in chosen if not c)
    per_user: dict[str, int] = {}
    for feedback, c in zip(evidence.periods, chosen, strict=True):
        per_user[feedback.user_id] = per_user.get(feedback.user_id, 0) + len(feedback.records) - len(c)
    counts = ", ".join(f"{user} {n}" for user, n in list(per_user.items())[:MAX_USERS_NAMED])
    more = f" and {len(per_user) - MAX_USERS_NAMED} more user(s)" if len(per_user) > MAX_USERS_NAMED else ""
    outcome_known = any(r.correct is not None for feedback in evidence.periods for r in feedback.records)
    order = "failures first, " if outcome_known else ""
    return (
        f"\nLeft out for the token budget ({max_tokens} tokens; chosen {order}every user and period in turn): "
        f"{left} question(s) (per user: {counts}{more}); (user, period) pairs with none shown: {empty}.\n"
    )
