"""The proposer's evidence: every user and period represented within the token budget, failures first,
the omission stated, and the feedback mode's guarantees kept."""

from __future__ import annotations

import re

import pytest

from memevo.environments.amemgym.data.models import Item
from memevo.environments.feedback import FeedbackConfig, FeedbackMode
from memevo.environments.records import EpisodeResult, PeriodResult, QARecord, remember
from memevo.evolve.evidence import (
    approx_tokens,
    bundled_encoding,
    count_tokens,
    evidence_from_episodes,
    render_evidence,
)
from tests.doubles.category_backend import category_world

ITEMS = category_world(3, 11)
BY_ID = {item.id: item for item in ITEMS}
COMPLETE_GT = FeedbackConfig(mode=FeedbackMode.complete, with_ground_truth=True)


def episode(item: Item, wrong: set[tuple[int, int]]) -> EpisodeResult:
    """Answers right except at the (period, question) pairs in ``wrong``; a long memory per period."""
    periods = []
    for p, period in enumerate(item.periods):
        records = []
        memories: dict[str, str] = {}
        notes = remember(memories, f"notes of {item.id} p{p}: " + "x" * 400)
        for q, question in enumerate(item.qas):
            gold = question.gold_index(period.state) + 1
            choice = gold % len(question.answer_choices) + 1 if (p, q) in wrong else gold
            records.append(
                QARecord(
                    user_id=item.id,
                    period=p,
                    question_index=q,
                    prompt="p",
                    raw_reply="r",
                    choice=choice,
                    gold=gold,
                    n_choices=len(question.answer_choices),
                    correct=choice == gold,
                    memory_id=notes,
                )
            )
        periods.append(PeriodResult(user_id=item.id, period=p, qa=records, memories=memories))
    return EpisodeResult(user_id=item.id, policy_id="seed", periods=periods)


def shown(text: str) -> list[tuple[str, int]]:
    return [(user, int(period)) for user, period in re.findall(r"## User (\S+), period (\d+)", text)]


def test_every_user_and_period_is_represented_within_the_budget() -> None:
    episodes = [episode(item, wrong={(p, 3) for p in range(11)}) for item in ITEMS]
    evidence = evidence_from_episodes(episodes, BY_ID, COMPLETE_GT)
    assert evidence.n_questions == 3 * 11 * 4
    text = render_evidence(evidence, max_tokens=6000)
    assert count_tokens(text) <= 6000
    assert sorted(shown(text)) == sorted((item.id, p) for item in ITEMS for p in range(11))
    # Failures first: with room for one or two questions per (user, period), the wrong one (plan 4) is there.
    blocks = text.split("## User ")[1:]
    assert all("plan number 4" in block and "(answered wrongly)" in block for block in blocks)
    assert "Left out for the token budget" in text and "failures first" in text
    left = int(re.search(r"turn\): (\d+) question\(s\)", text).group(1))  # type: ignore[union-attr]
    assert left == evidence.n_questions - int(re.search(r"(\d+) of 132 questions shown", text).group(1))  # type: ignore[union-attr]
    assert left > 0


def test_a_large_budget_shows_everything_and_says_so() -> None:
    evidence = evidence_from_episodes([episode(ITEMS[0], set())], BY_ID, COMPLETE_GT)
    text = render_evidence(evidence, max_tokens=100_000)
    assert "44 of 44 questions shown" in text and "Left out" not in text
    assert text.count("notes of user-0 p3") == 1  # each memory once per (user, period)


def test_question_only_evidence_carries_no_choices_letters_states_or_outcomes() -> None:
    items = category_world(2, 3)
    by_id = {item.id: item for item in items}
    config = FeedbackConfig(mode=FeedbackMode.question_only, with_exposed_states=False)
    episodes = [episode(item, wrong={(0, 0), (1, 2)}) for item in items]
    text = render_evidence(evidence_from_episodes(episodes, by_id, config), max_tokens=800)
    assert shown(text)
    for leak in ("Something for a", "(A)", "Correct answer", "Assistant's answer", "answered", "failures first"):
        assert leak not in text
    # Without the outcome the choice depends on positions only, shown in question order within a period.
    for block in text.split("## User ")[1:]:
        numbers = [int(n) for n in re.findall(r"Question (\d+):", block)]
        assert numbers == sorted(numbers)


def test_a_tight_budget_still_shows_every_question_somewhere() -> None:
    """A few questions fit per period; each period starts from another one, so no question is never shown."""
    episodes = [episode(item, wrong=set()) for item in ITEMS]
    evidence = evidence_from_episodes(episodes, BY_ID, FeedbackConfig(mode=FeedbackMode.question_only))
    text = render_evidence(evidence, max_tokens=1200)
    per_block = [re.findall(r"Question (\d+):", block) for block in text.split("## User ")[1:]]
    assert max(len(numbers) for numbers in per_block) < len(ITEMS[0].qas)  # the budget does cut
    assert {int(n) for numbers in per_block for n in numbers} == set(range(1, len(ITEMS[0].qas) + 1))


@pytest.mark.parametrize("budget", [300, 1500])
def test_the_budget_holds_for_any_size(budget: int) -> None:
    episodes = [episode(item, wrong={(p, p % 4) for p in range(11)}) for item in ITEMS]
    text = render_evidence(evidence_from_episodes(episodes, BY_ID, COMPLETE_GT), max_tokens=budget)
    assert count_tokens(text) <= budget
    assert "Left out for the token budget" in text


def test_no_questions_is_no_feedback() -> None:
    config = FeedbackConfig(mode=FeedbackMode.none)
    assert render_evidence(evidence_from_episodes([episode(ITEMS[0], set())], BY_ID, config), 1000) == "No feedback."


def test_the_budget_counts_real_tokens_where_a_tokenizer_is_installed() -> None:
    """cl100k splits digits in threes: 100 digits are 34 tokens, not the 25 of the four-characters guess."""
    if bundled_encoding() is None:
        pytest.skip("litellm's bundled tiktoken files are not installed")
    assert count_tokens("1234567890" * 10) == 34 and approx_tokens("1234567890" * 10) == 25
    assert count_tokens("<|endoftext|>") > 1  # special-token text in user data is counted as text, not refused


def test_a_memory_is_cut_to_its_share_in_tokens() -> None:
    episodes = [episode(item, wrong=set()) for item in ITEMS[:1]]
    long = episodes[0].model_copy(deep=True)
    for period in long.periods:
        period.memories = {key: "7" * 3000 for key in period.memories}
    text = render_evidence(evidence_from_episodes([long], BY_ID, COMPLETE_GT), max_tokens=2000)
    assert "(memory cut for the budget)" in text and count_tokens(text) <= 2000


def test_a_budget_that_holds_one_question_and_the_closing_lines_shows_that_question() -> None:
    """The header and the closing note keep only the room they take: a small budget (the quickstart's) is not
    spent on an allowance, leaving the proposer no question to read."""
    whole = episode(ITEMS[0], wrong={(0, 2)})
    one_period = whole.model_copy(update={"periods": whole.periods[:1]})
    evidence = evidence_from_episodes([one_period], BY_ID, COMPLETE_GT)
    block = render_evidence(evidence, max_tokens=100_000).split("\n\n", 1)[1]
    one_question = block.split("\nQuestion 2:")[0]
    nothing = render_evidence(evidence, max_tokens=1)
    budget = count_tokens(one_question) + count_tokens(nothing) + 12
    text = render_evidence(evidence, max_tokens=budget)
    assert f"1 of {len(ITEMS[0].qas)} questions shown" in text and count_tokens(text) <= budget
    assert "Question 3:" in text  # the failure, first
