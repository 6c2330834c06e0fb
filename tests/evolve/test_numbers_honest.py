"""Numbers that cannot lie: a stable objective decides, an unmeasurable memory score is n/a with its reason,
the headline fits a terminal and leads with the objective, the report says what happened."""

from __future__ import annotations

import logging

import pytest

from memevo.environments.metrics import ProbeCoverage, Scores, UpperBoundEntry, UpperBoundTable, score_episodes
from memevo.environments.metrics.measurable import memory_not_measurable, position_collapse, wilson_lower
from memevo.environments.metrics.scores import user_scores
from memevo.environments.records import ProbeRecord
from memevo.environments.score_text import failure_cell
from memevo.evolve.config import LEGACY_OBJECTIVE_NOTE, parse_evolve_config
from memevo.evolve.evaluation import CandidateEval, UserOutcome
from memevo.evolve.presentation.headline import WIDTH, held_out_lines, objective_interval
from memevo.evolve.presentation.report import _scores_line
from memevo.evolve.records import EvolutionResult
from tests.environments.test_metrics_scores import STATES, episode, hand_item, qa
from tests.evolve.test_pooled_selection import scored_user

USERS = [f"u{i}" for i in range(6)]


def ub_table(correct: bool = True, *, unreadable: int = 0) -> UpperBoundTable:
    """Every (user, question, state) the hand item asks, all right or all wrong; the first ``unreadable``
    entries of each user unparsed (and so wrong)."""
    entries = []
    for user in USERS:
        keys = sorted({(q, tuple(STATES[p][k] for k in hand_item().qas[q].required_info))
                       for p in range(3) for q in range(3)})
        for index, (question, state) in enumerate(keys):
            junk = index < unreadable
            entries.append(UpperBoundEntry(item_id=user, question_index=question, state=list(state),
                                           correct=correct and not junk, format_error=junk))
    return UpperBoundTable(entries=entries)


def episodes(right: set[tuple[int, int]]) -> list:
    """Each user answers all 3 questions in all 3 periods; right where (period, question) is in ``right``."""
    return [episode({p: [qa(p, q, (p, q) in right, user=user) for q in range(3)] for p in range(3)}, user=user)
            for user in USERS]


ITEMS = [hand_item(user) for user in USERS]


def test_wilson_lower_bound_is_honest_at_the_edges() -> None:
    assert wilson_lower(0, 10) == 0.0
    assert wilson_lower(10, 10) == pytest.approx(10 / (10 + 1.6448536269514722 ** 2))
    assert wilson_lower(5, 10) < 0.5 < wilson_lower(500, 1000) + 0.03


def test_a_clear_upper_bound_gives_a_memory_score() -> None:
    scores = score_episodes(episodes({(0, 0), (1, 1)}), ITEMS, ub_table())
    assert scores.memory_na_reason is None
    assert scores.pooled_memory_score is not None and scores.memory_score is not None


@pytest.mark.parametrize(("table", "reason"), [
    (ub_table(correct=False), "not above random"),
    (ub_table(unreadable=3), "unreadable"),
    (None, "no upper bound"),
])
def test_an_upper_bound_below_random_or_made_of_junk_is_never_a_number(table: UpperBoundTable | None,
                                                                       reason: str) -> None:
    # The junk case is the issue's: a candidate with accuracy 0 against an upper bound of ~0 scores 1.0 by the
    # formula; here it must be n/a everywhere, overall, per period and per user.
    scores = score_episodes(episodes(set()), ITEMS, table)
    assert scores.accuracy == 0.0
    assert scores.memory_score is None and scores.pooled_memory_score is None
    assert reason in (scores.memory_na_reason or "")
    assert all(p.memory_score is None and p.pooled_memory_score is None for p in scores.per_period)
    assert all(u.memory_score is None for u in user_scores(episodes(set()), ITEMS, table))
    assert "n/a" in _scores_line("seed", scores) and reason in _scores_line("seed", scores)


def test_an_upper_bound_equal_to_random_on_few_questions_is_not_measurable() -> None:
    assert "not above random" in memory_not_measurable(n_questions=6, upper_bound=0.5, random_baseline=0.375,
                                                       upper_bound_unreadable=0.0)
    assert memory_not_measurable(n_questions=200, upper_bound=0.5, random_baseline=0.375,
                                 upper_bound_unreadable=0.0) is None


def test_answer_position_collapse_is_named() -> None:
    assert "71 of 72 answers are option 1" in position_collapse([1] * 71 + [2])
    assert position_collapse([1, 2, 3, 4] * 5) is None
    assert position_collapse([1] * 5) is None  # too few answers to call it anything


def outcome(user: str, accuracy: float, ratios: list[float]) -> UserOutcome:
    return UserOutcome(user_id=user, accuracy=accuracy, period_accuracy=[accuracy] * len(ratios),
                       memory_score=sum(ratios) / len(ratios), period_memory=ratios)


def test_the_default_objective_follows_accuracy_where_cell_ratios_disagree() -> None:
    # A is right more often; B gets one cell whose upper bound barely beats random, and its ratio of 12 wins
    # AMemGym's mean for B.
    a = [outcome("x", 0.6, [0.5, 0.4]), outcome("y", 0.6, [0.5, 0.4])]
    b = [outcome("x", 0.5, [12.0, -0.2]), outcome("y", 0.5, [0.3, 0.2])]
    config = parse_evolve_config({"seed": {"policy": {"kind": "awi"}}, "data": {"path": "d.json"}})
    assert config.objective == "accuracy"

    def evaluation(users: list[UserOutcome], objective: str) -> CandidateEval:
        return CandidateEval(candidate_id="c", split="val", objective=objective, users=users, n_users_total=2)

    assert evaluation(a, config.objective).score > evaluation(b, config.objective).score
    assert evaluation(a, "amemgym_memory_score").score < evaluation(b, "amemgym_memory_score").score


def test_an_old_memory_score_objective_loads_as_accuracy_and_says_so(caplog: pytest.LogCaptureFixture,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from memevo.evolve import config as config_module

    monkeypatch.setattr(config_module, "_SAID", set())  # said once per process: start from none said
    with caplog.at_level(logging.WARNING, logger="memevo.evolve"):
        config = parse_evolve_config({"seed": {"policy": {"kind": "awi"}}, "data": {"path": "d.json"},
                                      "objective": "memory_score"})
        parse_evolve_config({"seed": {"policy": {"kind": "awi"}}, "data": {"path": "d.json"},
                             "objective": "memory_score"})
    assert config.objective == "accuracy"
    assert caplog.text.count(LEGACY_OBJECTIVE_NOTE) == 1


def test_a_stored_result_that_decided_on_memory_score_reads_as_amemgyms_ratio() -> None:
    scores = score_episodes(episodes({(0, 0)}), ITEMS, ub_table())
    result = EvolutionResult.model_validate({
        "protocol": "outer_loop", "objective": "memory_score", "seed": _candidate(), "best": _candidate(),
        "seed_scores": scores, "best_scores": scores, "seed_user_scores": [], "best_user_scores": [],
        "stop_reason": "x", "usage": {"by_role": {}}})
    assert result.objective == "amemgym_memory_score"
    assert result.environment == "amemgym"  # written before the environment was recorded: AMemGym's
    from memevo.evolve.evaluation import CandidateEval

    stored = CandidateEval.model_validate({"candidate_id": "c", "split": "val", "objective": "memory_score",
                                           "n_users_total": 1})
    assert stored.objective == "amemgym_memory_score"  # an old run folder's evaluations still load, named truly


def _candidate() -> dict:
    from memevo.agents.policy import MemoryPolicy
    from memevo.evolve.candidates import Candidate

    return Candidate(policy=MemoryPolicy(kind="awi")).model_dump()


@pytest.mark.parametrize("measurable", [True, False])
def test_the_headline_leads_with_the_objective_and_fits_a_terminal(measurable: bool) -> None:
    table = ub_table(correct=measurable)
    seed_eps, best_eps = episodes({(0, 0)}), episodes({(0, 0), (1, 1), (2, 2)})
    seed, best = score_episodes(seed_eps, ITEMS, table), score_episodes(best_eps, ITEMS, table)
    lines = held_out_lines("accuracy", seed, best, user_scores(seed_eps, ITEMS, table),
                           user_scores(best_eps, ITEMS, table))
    assert all(len(line) <= WIDTH for line in lines)
    assert lines[0].startswith("held-out test: 6 users, 54 questions")
    assert lines[1].startswith("  accuracy: seed 0.111 [") and "-> best 0.333 [" in lines[1]
    memory = next(line for line in lines if line.startswith("  memory score"))
    assert ("n/a (upper bound 0.000 not above random" in memory) != measurable
    mode = seed.model_copy(update={"answer_mode": "likelihood"})
    text = " ".join(" ".join(held_out_lines("accuracy", mode, best, user_scores(seed_eps, ITEMS, table),
                                            user_scores(best_eps, ITEMS, table))).split())
    assert "answers likelihood (each option's text scored" in text and "answers generated" in " ".join(" ".join(lines).split())


def test_a_diagnosis_whose_probes_were_all_unreadable_says_so_not_undiagnosed() -> None:
    unreadable = ProbeRecord(user_id="u0", period=0, question_index=0, predicted={"a": None, "b": None},
                             truth=dict(STATES[0]), correct={"a": False, "b": False}, format_error=True,
                             unread=["a", "b"])
    eps = [episode({0: [qa(0, 0, False, user="u0")]}, {0: [unreadable]}, user="u0")]
    scores = score_episodes(eps, ITEMS[:1])
    assert isinstance(scores.probes, ProbeCoverage) and scores.failure is None
    assert failure_cell(scores) == "n/a (probe coverage 0%)"
    assert "no diagnosis" in failure_cell(Scores.model_validate(
        scores.model_dump() | {"probes": None}))


def test_an_accuracy_interval_over_two_users_stays_inside_zero_and_one() -> None:
    """Two users' accuracies 0 and 1 give a t-interval of about [-5.9, 6.9]; ``memevo compare`` printed it as is,
    while the end-of-run summary clips it: both now show [0, 1]. AMemGym's ratio has no bounds and is not clipped."""
    spread = [scored_user(f"user-{i}", value) for i, value in enumerate([0.0, 1.0])]
    assert objective_interval("accuracy", spread) == "0.500 [0.000, 1.000]"
    assert objective_interval("memory_score", spread).startswith("0.500 [-")
