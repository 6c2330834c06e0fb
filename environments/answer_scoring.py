"""Free-text answer scoring as the QA benchmarks report it: normalisation, exact match, substring match and
token F1, with the variants each benchmark's own scorer uses.

The benchmarks agree on SQuAD-style normalisation (lower case, punctuation and articles dropped, whitespace
collapsed); LoCoMo also drops "and" and stems tokens with Porter's stemmer, MemoryAgentBench scores a yes/no
answer zero against anything else. Those differences are parameters here, not copies of the function.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Iterable

Stemmer = Callable[[str], str]

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_ARTICLES_AND = re.compile(r"\b(a|an|the|and)\b")
_CLOSED_ANSWERS = frozenset({"yes", "no", "noanswer"})


def normalize_answer(text: str, *, drop_and: bool = False) -> str:
    """Lower case, no punctuation, no articles (and no "and" when ``drop_and``), single spaces."""
    text = "".join(char for char in text.lower() if char not in _PUNCTUATION)
    text = (_ARTICLES_AND if drop_and else _ARTICLES).sub(" ", text)
    return " ".join(text.split())


def porter_stemmer() -> Stemmer | None:
    """Porter's stemmer from nltk when it is installed (LoCoMo's F1 stems tokens), else None."""
    try:
        from nltk.stem import PorterStemmer
    except ImportError:
        return None
    return PorterStemmer().stem  # type: ignore[no-any-return]


def exact_match(prediction: str, gold: str) -> bool:
    return normalize_answer(prediction) == normalize_answer(gold)


def substring_match(prediction: str, gold: str) -> bool:
    """The normalised gold answer appears inside the normalised prediction (MemoryAgentBench's SubEM)."""
    return normalize_answer(gold) in normalize_answer(prediction)


def token_f1(prediction: str, gold: str, *, stem: Stemmer | None = None, drop_and: bool = False,
             closed_answers_strict: bool = False) -> float:
    """Harmonic mean of token precision and recall over the normalised texts (multiset overlap).

    ``closed_answers_strict``: a yes/no/noanswer on either side scores 0 unless both texts are equal.
    """
    predicted, expected = normalize_answer(prediction, drop_and=drop_and), normalize_answer(gold, drop_and=drop_and)
    if closed_answers_strict and (predicted in _CLOSED_ANSWERS or expected in _CLOSED_ANSWERS):
        return float(predicted == expected)
    predicted_tokens, expected_tokens = predicted.split(), expected.split()
    if stem is not None:
        predicted_tokens = [stem(token) for token in predicted_tokens]
        expected_tokens = [stem(token) for token in expected_tokens]
    overlap = sum((Counter(predicted_tokens) & Counter(expected_tokens)).values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(predicted_tokens), overlap / len(expected_tokens)
    return 2 * precision * recall / (precision + recall)


def multi_part_f1(prediction: str, gold: str, *, stem: Stemmer | None = None) -> float:
    """LoCoMo's multi-hop rule: both texts split on commas; each gold part takes its best-matching predicted
    part, and the parts' F1 values are averaged."""
    predicted_parts = [part.strip() for part in prediction.split(",")]
    gold_parts = [part.strip() for part in gold.split(",")]
    return sum(max(token_f1(p, g, stem=stem, drop_and=True) for p in predicted_parts) for g in gold_parts) / len(
        gold_parts)


def best_over(metric: Callable[[str, str], float | bool], prediction: str, golds: Iterable[str]) -> float:
    """The best score against any of several acceptable answers (0 when there are none)."""
    return max((float(metric(prediction, gold)) for gold in golds), default=0.0)


def fraction_contained(prediction: str, elements: list[str]) -> float:
    """Share of ``elements`` found (case-insensitively) inside the prediction; 0 for no elements."""
    if not elements:
        return 0.0
    lowered = prediction.lower()
    return sum(element.lower() in lowered for element in elements) / len(elements)


def answer_after_prefix(output: str, prefix: str = "Answer:") -> str:
    """The text after ``prefix`` on its line, else the first line: MemoryAgentBench scores both a reply and this
    parsed form and keeps the better."""
    match = re.search(f"{re.escape(prefix)}(.*)", output, flags=re.IGNORECASE)
    line = match.group(1) if match else output.split("\n", 1)[0]
    return re.sub(f"^{re.escape(prefix)}", "", line.strip(), flags=re.IGNORECASE).strip()
