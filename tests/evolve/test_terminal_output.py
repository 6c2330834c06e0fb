"""What a person sees in the terminal: no library request logs, bars only on a terminal, explained numbers."""

from __future__ import annotations

import logging

import dspy
import pytest

from memevo.agents.llm.accounting import RoleUsage, dollars_text
from memevo.environments.metrics import Scores
from memevo.environments.progress import configure_terminal, phase
from memevo.environments.score_text import memory_score_text, score_lines
from memevo.evolve.presentation.explain import generation_line, proposals_line, spend_line
from memevo.evolve.proposers.base import proposal_error_line


def test_request_logs_of_http_libraries_are_off_and_memevo_lines_stay(capsys: pytest.CaptureFixture[str]) -> None:
    configure_terminal()
    for name in ("httpx", "httpx2", "openai._base_client", "LiteLLM", "mlflow.tracking", "some.new.library"):
        logging.getLogger(name).info('HTTP Request: POST http://x/v1/chat/completions "HTTP/1.1 200 OK"')
    logging.getLogger("memevo.evolve").info("generation 1: 3 candidate(s)")
    logging.getLogger("httpx2").warning("connection reset")
    err = capsys.readouterr().err
    assert "HTTP Request" not in err
    assert "generation 1: 3 candidate(s)" in err and "connection reset" in err
    configure_terminal()  # a second call adds no second handler
    logging.getLogger("memevo.evolve").info("once")
    assert capsys.readouterr().err.count("once") == 1


def test_bars_are_not_drawn_when_stderr_is_not_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    with phase("users x periods", 4, "period") as bar:
        for _ in range(4):
            bar.advance()
        bar.note("last user 0.500")
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(("usage", "expected"), [
    (RoleUsage(calls=5, unpriced_calls=5), "unpriced (no known price: set llm.price)"),
    (RoleUsage(calls=5, cache_hits=5), "$0 (every reply came from the cache)"),
    (RoleUsage(calls=5, dollars=0.0123), "$0.0123"),
    (RoleUsage(calls=5, dollars=0.5, unpriced_calls=2), "$0.5000 + 2 unpriced call(s) (no known price: set llm.price)"),
    (RoleUsage(calls=3, cache_hits=1, dollars=0.0), "$0.0000"),  # a free local model, priced at 0
    (RoleUsage(calls=4, dollars=0.01, unknown_calls=1), "$0.0100 + 1 call(s) of unknown cost"),
])
def test_dollars_are_never_a_silent_zero_for_an_unpriced_model(usage: RoleUsage, expected: str) -> None:
    assert dollars_text(usage) == expected


def test_the_spend_line_names_requests_in_flight_at_a_kill() -> None:
    line = spend_line(RoleUsage(calls=4, cache_hits=1, unknown_calls=2, prompt_tokens=10, completion_tokens=5))
    assert line.startswith("4 calls (1 cached, 2 unknown: in flight at a kill), 15 tokens")
    cancelled = spend_line(RoleUsage(calls=4, unknown_calls=1, cancelled_calls=3))
    assert cancelled.startswith("4 calls (0 cached, 1 unknown: in flight at a kill, 3 cancelled by the run)")


def _scores(**fields: object) -> Scores:
    base: dict[str, object] = {"n_users": 2, "n_questions": 8, "accuracy": 0.25, "random_baseline": 0.5,
                               "upper_bound": 1.0, "memory_score": -0.5, "format_errors": 0, "format_error_rate": 0.0,
                               "random_fallbacks": 0, "random_fallback_rate": 0.0, "n_excluded": 0,
                               "n_memory_points": 2, "per_period": []}
    return Scores.model_validate(base | fields)


def test_memory_score_says_why_it_is_missing_or_negative() -> None:
    missing = "no upper bound was computed (set upper_bound: true or pass --upper-bound)"
    assert memory_score_text(_scores(upper_bound=None, memory_score=None, memory_na_reason=missing)) == (
        f"memory score n/a ({missing})")
    reason = "upper bound 0.500 not above random 0.500 over 8 questions"
    assert memory_score_text(_scores(memory_na_reason=reason, memory_score=None)) == f"memory score n/a ({reason})"
    negative = memory_score_text(_scores(pooled_memory_score=-0.5))
    assert negative.startswith("memory score -0.500 (below random guessing; 0 = random")
    assert "(AMemGym's mean of cell ratios -0.500 (below random" in negative and "2/2 cells" in negative
    assert memory_score_text(_scores(memory_score=0.4, pooled_memory_score=0.2)) == (
        "memory score 0.200 (AMemGym's mean of cell ratios 0.400, 2/2 cells)")
    assert score_lines(_scores())[0] == "accuracy 0.250 (random 0.500, upper bound 1.000)"


class RewriteTypes(dspy.Signature):
    """Stand-in for the proposer's signature: what matters here are its output fields."""

    current_types: str = dspy.InputField()
    new_types: str = dspy.OutputField()
    changes: list[str] = dspy.OutputField()


def test_unreadable_proposer_reply_is_one_line_without_the_reply() -> None:
    reply = "Sure!\n" + "Here are my thoughts about the memory types.\n" * 10
    error = dspy.utils.exceptions.AdapterParseError("ChatAdapter", RewriteTypes, reply)
    line = proposal_error_line(error)
    assert "\n" not in line and "Here are my thoughts" not in line
    assert line == f"ChatAdapter could not read the {len(reply)}-character reply (expected fields: new_types, changes)"
    assert proposal_error_line(TimeoutError("read timed out\nmore")) == "TimeoutError: read timed out"


def test_generation_lines_name_hyperparameter_only_candidates_and_the_kept_one() -> None:
    line = proposals_line(2, prompt_candidates=1, tuning_candidates=2, proposals=3, rejected=2, repaired=0)
    assert "3 candidate(s) (1 with a new prompt, 2 hyperparameter-only) from 3 prompt proposal(s)" in line
    assert "repeated" not in line
    repeated = proposals_line(2, prompt_candidates=2, tuning_candidates=0, proposals=3, rejected=0, repaired=0,
                              duplicates=1)
    assert repeated.endswith("(0 rejected, 0 repaired, 1 repeated a known policy)")
    summary = generation_line(2, candidates=3, pruned=3, generation_best=None, kept="g1c0-a2b3211f", improved=False,
                              kept_objective=1.0, usage=RoleUsage(calls=10, unpriced_calls=10))
    assert "best validation n/a (no candidate reached validation)" in summary
    assert "kept g1c0-a2b3211f (validation 1.000)" in summary
    assert summary.endswith("unpriced (no known price: set llm.price)")
    empty = generation_line(2, candidates=0, pruned=0, generation_best=None, kept="g1c0-a2b3211f", improved=False,
                            kept_objective=1.0, usage=RoleUsage())
    assert "best validation n/a (no candidate);" in empty


def test_evolution_phases_size_their_bars_in_the_units_the_loop_reports(monkeypatch: pytest.MonkeyPatch) -> None:
    from memevo.environments import progress
    from memevo.evolve.presentation.progress import candidates_phase, evaluation_phase, test_phase

    opened: list[tuple[str, int | None, str, bool]] = []

    class Recorder:
        def __init__(self, *, total: int | None, desc: str, unit: str, leave: bool, **_: object) -> None:
            opened.append((desc, total, unit, leave))

        def __enter__(self) -> Recorder:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

    monkeypatch.setattr(progress, "_bar_class", lambda: Recorder)
    monkeypatch.setattr(progress.sys.stderr, "isatty", lambda: True)  # bars are drawn on a terminal only
    with candidates_phase(2, total=3), evaluation_phase("g2c0-a2b3211f", "train", periods=12), \
            test_phase(periods=40):
        pass
    assert opened == [("generation 2", 3, "candidate", True), ("g2c0-a2b3211f train", 12, "period", False),
                      ("test scoring", 40, "period", True)]
