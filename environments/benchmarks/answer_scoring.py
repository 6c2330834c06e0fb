"""The benchmarks' own variants of free-text scoring, built on ``answer_scores`` (normalisation, exact match,
token F1): LoCoMo's stemmed F1 without "and", its multi-part rule for multi-hop answers and its adversarial rule
(credit for saying the conversation does not mention it, whatever option was offered), MemoryAgentBench's
substring match, best-of-several gold answers, element containment, and reading the answer after a prefix.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from memevo.environments.answer_scores import normalize_answer, token_f1

Stemmer = Callable[[str], str]


def porter_stemmer() -> Stemmer | None:
    """Porter's stemmer from nltk when it is installed (LoCoMo's F1 stems tokens), else None."""
    try:
        from nltk.stem import PorterStemmer
    except ImportError:
        return None
    return PorterStemmer().stem  # type: ignore[no-any-return]


def locomo_tokens(text: str, stem: Stemmer | None) -> str:
    """LoCoMo's normal form: the shared one, without "and", each token stemmed when a stemmer is given."""
    tokens = [token for token in normalize_answer(text).split() if token != "and"]
    return " ".join(stem(token) for token in tokens) if stem is not None else " ".join(tokens)


def locomo_f1(reply: str, gold: str, stem: Stemmer | None) -> float:
    return token_f1(locomo_tokens(reply, stem), locomo_tokens(gold, stem))


def multi_part_f1(reply: str, gold: str, stem: Stemmer | None) -> float:
    """LoCoMo's multi-hop rule: both texts split on commas; each gold part takes its best-matching reply part,
    and the parts' F1 values are averaged."""
    reply_parts = [part.strip() for part in reply.split(",")]
    gold_parts = [part.strip() for part in gold.split(",")]
    return sum(max(locomo_f1(r, g, stem) for r in reply_parts) for g in gold_parts) / len(gold_parts)


NOT_MENTIONED_PHRASES = ("no information available", "not mentioned")
"""The phrases LoCoMo's scorer credits in a reply to an adversarial (category 5) question."""


def says_not_mentioned(reply: str) -> float:
    """LoCoMo's adversarial rule: 1.0 when the reply, lower-cased, contains one of ``NOT_MENTIONED_PHRASES``."""
    lowered = reply.lower()
    return float(any(phrase in lowered for phrase in NOT_MENTIONED_PHRASES))


def lettered_option(reply: str, options: dict[str, str]) -> str:
    """The text a reply to a question offered as "(a) ... (b) ..." stands for, read as LoCoMo's baseline reads it:
    a one-character reply is option (a) if it holds "a", else (b); a three-character one is (a) if it holds "(a)",
    else (b); any longer reply stands for itself."""
    text = reply.strip().lower()
    if len(text) == 1:
        return str(options.get("a" if "a" in text else "b", reply))
    if len(text) == 3:
        return str(options.get("a" if "(a)" in text else "b", reply))
    return reply


def substring_match(reply: str, gold: str) -> float:
    """1.0 when the normalised gold answer appears inside the normalised reply (MemoryAgentBench's SubEM)."""
    return float(normalize_answer(gold) in normalize_answer(reply))


def contains_all(reply: str, elements: list[str]) -> float:
    """1.0 when every element appears (case-insensitively) in the reply, as EventQA's recall counts a hit."""
    lowered = reply.lower()
    return float(bool(elements) and all(element.lower() in lowered for element in elements))


def best_over(metric: Callable[[str, str], float], reply: str, golds: Iterable[str]) -> float:
    """The best score against any of several acceptable answers (0 when there are none)."""
    return max((metric(reply, gold) for gold in golds), default=0.0)


def answer_after_prefix(output: str, prefix: str = "Answer:") -> str:
    """The text after ``prefix`` on its line, else the first line: MemoryAgentBench scores both a reply and this
    parsed form and keeps the better."""
    match = re.search(f"{re.escape(prefix)}(.*)", output, flags=re.IGNORECASE)
    line = match.group(1) if match else output.split("\n", 1)[0]
    return re.sub(f"^{re.escape(prefix)}", "", line.strip(), flags=re.IGNORECASE).strip()
