"""Scores of a free-text answer against its gold text: exact match, token F1, and an LLM judge.

Exact match and token F1 compare normalised texts (lower case, punctuation and the articles a/an/the dropped,
whitespace collapsed), as the SQuAD-style scorers of LoCoMo and MemoryAgentBench do; a benchmark whose official
scorer differs (stemming, per-category rules) normalises before calling them. The judge asks the gateway under
the ``judge`` role, so its calls are cached and counted apart from the agent's; it answers yes or no, and a
reply that says neither scores 0 with the reply kept as the detail.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable

from memevo.agents.llm.protocol import ChatClient

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """Lower case, no punctuation, no articles, single spaces."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split())


def exact_match(reply: str, gold: str) -> float:
    """1.0 when the normalised texts are equal, else 0.0."""
    return float(normalize_answer(reply) == normalize_answer(gold))


def token_f1(reply: str, gold: str) -> float:
    """The harmonic mean of token precision and recall of the normalised texts (1.0 when both are empty)."""
    predicted, expected = normalize_answer(reply).split(), normalize_answer(gold).split()
    if not predicted or not expected:
        return float(predicted == expected)
    common = sum((Counter(predicted) & Counter(expected)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(expected)
    return 2 * precision * recall / (precision + recall)


JUDGE_PROMPT = (
    "You grade answers to questions about a long conversation.\n\n"
    "Question: {question}\nGold answer: {gold}\nAnswer to grade: {reply}\n\n"
    "Does the answer to grade give the gold answer's information (wording may differ; it may add detail that does "
    "not contradict it)? Reply with one word: yes or no."
)


def judge_verdict(reply: str) -> float | None:
    """1.0 for a reply starting with yes, 0.0 for no, None when it says neither."""
    words = normalize_answer(reply).split()
    first = words[0] if words else ""
    return 1.0 if first == "yes" else 0.0 if first == "no" else None


async def judge_answer(judge: ChatClient, question: str, gold: str, reply: str, prompt: str = JUDGE_PROMPT,
                       verdict: Callable[[str], float | None] = judge_verdict) -> tuple[float, str]:
    """The judge's [0, 1] verdict on ``reply`` and its raw reply; ``prompt`` takes {question} {gold} {reply};
    ``verdict`` reads the judge's reply (a benchmark whose official scorer reads it differently passes its own)."""
    text = prompt.format(question=question, gold=gold, reply=reply)
    answer = await judge.chat([{"role": "user", "content": text}], role="judge", temperature=0.0, max_tokens=8)
    value = verdict(answer.text)
    return (0.0 if value is None else value), answer.text

