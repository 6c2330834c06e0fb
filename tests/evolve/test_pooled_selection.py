"""Selection pools questions as every displayed score does: a cell (user, period) weighs its questions.

On LoCoMo a conversation's cell holds 100 to 260 questions. Selection used to average cells, so a candidate could
be kept on a mean that no screen showed, and the displayed "best - seed" was a mean over users, not the pooled score.
"""

from __future__ import annotations

from memevo.agents.policy import MemoryPolicy
from memevo.environments.metrics import UserScores
from memevo.evolve.api_outcomes import paired_on_test_users
from memevo.evolve.candidates import Candidate
from memevo.evolve.evaluation import CandidateEval, UserOutcome
from memevo.evolve.selection.acceptance import MeanAcceptance, PairedAcceptance
from memevo.evolve.selection.gate import not_worse
from memevo.evolve.selection.parents import best_of
from memevo.evolve.selection.sequential import SequentialTest, paired_gains


def scored_user(user_id: str, accuracy: float, questions: int = 4) -> UserScores:
    """One user with one period of ``questions`` questions answered at ``accuracy``."""
    return UserScores(user_id=user_id, n_questions=questions, accuracy=accuracy, random_baseline=0.25,
                      upper_bound=None, memory_score=accuracy, n_memory_points=1, n_excluded=0,
                      format_error_rate=0.0, random_fallback_rate=0.0, per_period_accuracy=[accuracy],
                      per_period_memory=[accuracy], per_period_questions=[questions])


def evaluated(values: dict[str, tuple[float, int]], objective: str = "accuracy") -> CandidateEval:
    """A candidate's result: per user, (accuracy, questions) of its one period."""
    users = [UserOutcome(user_id=user, accuracy=value, period_accuracy=[value], memory_score=value,
                         period_memory=[value], period_questions=[questions])
             for user, (value, questions) in values.items()]
    return CandidateEval(candidate_id="c", split="validation", objective=objective, users=users,
                         n_users_total=len(users))


def test_a_score_pools_the_questions_of_cells_of_different_sizes() -> None:
    """10 questions at 0.9 and 2 at 0.0: 9 right of 12 is 0.75; the mean of the two cells said 0.45."""
    result = evaluated({"long": (0.9, 10), "short": (0.0, 2)})
    assert result.score == 0.75
    assert result.period_scores == [0.75]


def test_amemgym_memory_score_stays_a_mean_of_cell_ratios() -> None:
    result = evaluated({"long": (0.9, 10), "short": (0.0, 2)}, objective="amemgym_memory_score")
    assert result.score == 0.45


def test_selection_decides_on_the_pooled_score() -> None:
    """The candidate loses the big cell and wins the small one: worse pooled (0.70 vs 0.75), better on the cells'
    mean (0.70 vs 0.45). Every rule now says worse."""
    parent = evaluated({"long": (0.9, 10), "short": (0.0, 2)}).instances()
    candidate = evaluated({"long": (0.7, 10), "short": (0.7, 2)}).instances()
    assert not MeanAcceptance().decide(candidate, parent).accepted
    assert not not_worse(candidate, parent)
    gains = paired_gains(candidate, parent)
    assert abs(sum(gains) / len(gains) - (0.70 - 0.75)) < 1e-12
    assert SequentialTest(confidence=0.9, min_effect=0.0, looks=1).verdict(gains).mean_gain < 0


def test_paired_acceptance_and_parent_choice_use_the_pooled_score() -> None:
    """Two big cells a little worse, two small ones much better: +0.21 on the cells' mean, -0.064 pooled."""
    parent = evaluated({"a": (0.5, 100), "b": (0.5, 100), "c": (0.5, 2), "d": (0.5, 2)}).instances()
    candidate = evaluated({"a": (0.4, 100), "b": (0.45, 100), "c": (1.0, 2), "d": (1.0, 2)}).instances()
    decision = PairedAcceptance(confidence=0.5).decide(candidate, parent)
    assert not decision.accepted and "mean gain -0.064" in decision.reason
    seed = Candidate(policy=MemoryPolicy(kind="awi", prompts={"memory_types": "seed"}))
    child = Candidate(policy=MemoryPolicy(kind="awi", prompts={"memory_types": "child"}), parent_id=seed.id)
    assert best_of([seed, child], {seed.id: parent, child.id: candidate}) == seed


def test_the_held_out_difference_is_the_pooled_one() -> None:
    """Seed and best on two test users of 100 and 2 questions: the pooled gain is (10 - 1) / 102, not the users'
    mean gain (0.1 - 0.5) / 2."""
    seed = [scored_user("big", 0.5, 100), scored_user("small", 1.0, 2)]
    best = [scored_user("big", 0.6, 100), scored_user("small", 0.5, 2)]
    test = paired_on_test_users("accuracy", seed, best)
    assert test.mean_diff is not None and abs(test.mean_diff - 9 / 102) < 1e-12
    memory = paired_on_test_users("memory_score", seed, best)
    assert memory.mean_diff is not None and abs(memory.mean_diff - (-0.2)) < 1e-12
