"""Kill harness for usage: ``memevo eval`` killed with a request in flight, at each step of its life, then resumed.

A request is booked in the run's usage ledger before it is sent, its reply goes into the response cache's journal,
and then one count settles the booking. The kill points (tests/doubles/kill_points.py, killing_endpoint.py; TEST
DOUBLES) fall between these steps: at the endpoint as the request arrives, after its reply arrived, after the reply
is in the cache, and just after the count (when the cache's writer has not committed the last replies yet). The
endpoint double records what it served. After each kill the ledger must hold exactly what was served, the request
in flight counted as unknown; the resume must send no request again whose reply the killed process held.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.doubles.eval_process import PRELOADED, EvalProcess, Kill, run_eval
from tests.doubles.kill_points import kill_point, start_fork_server
from tests.doubles.killing_endpoint import KillingEndpoint, at_request, memory_agent_reply, sent_again

PUT = "memevo.agents.llm.cache:ResponseCache.put"
COUNT = "memevo.agents.llm.accounting:Accounting.record_call"


@pytest.fixture(scope="module")
def endpoint():  # type: ignore[no-untyped-def]
    start_fork_server(PRELOADED)
    with KillingEndpoint(memory_agent_reply) as killing:
        yield killing


def _results(out: Path) -> list[tuple[Any, ...]]:
    rows = [json.loads(line) for line in (out / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
    return [tuple(row[key] for key in ("user_id", "period", "question_index", "choice", "correct")) for row in rows]


@pytest.fixture(scope="module")
def reference(endpoint: KillingEndpoint, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, EvalProcess]:
    out = tmp_path_factory.mktemp("reference") / "out"
    finished = run_eval(endpoint, out, resume=False)
    assert finished.code == 0, finished.output
    assert sent_again([], finished.served) == 0 and len(set(finished.served)) == len(finished.served)
    return out, finished


IN_FLIGHT: dict[str, tuple[Kill, int, int]] = {
    # kill -> (requests counted unknown after it, requests the resume sends again)
    "sent, not yet answered (at the endpoint)": (at_request(6), 1, 0),
    "answered, reply not yet in the cache": (kill_point(PUT, 6, "before"), 1, 1),
    "reply in the cache, answer not yet counted": (kill_point(PUT, 6, "after"), 1, 0),
    "answer counted, reply not yet committed by the cache's writer": (kill_point(COUNT, 6, "after"), 0, 0),
}


@pytest.mark.parametrize("kill", list(IN_FLIGHT), ids=list(IN_FLIGHT))
def test_a_kill_in_flight_leaves_usage_equal_to_what_was_served_and_the_resume_resends_no_held_reply(
    kill: str, endpoint: KillingEndpoint, reference: tuple[Path, EvalProcess], tmp_path: Path
) -> None:
    point, unknown, resent = IN_FLIGHT[kill]
    out = tmp_path / "out"
    killed = run_eval(endpoint, out, resume=False, kill=point)
    assert killed.code == -signal.SIGKILL and endpoint.triggers == [], killed.output
    assert killed.unknown == unknown
    assert killed.sent + killed.unknown == len(killed.served) + killed.unanswered
    resumed = run_eval(endpoint, out, resume=True)
    assert resumed.code == 0, resumed.output
    assert sent_again(killed.served, resumed.served) == resent
    assert resumed.unknown == unknown  # the killed process's request stays unknown: it may have been billed
    assert resumed.sent + resumed.unknown == len(killed.served) + len(resumed.served) + killed.unanswered
    assert _results(out) == _results(reference[0])


def test_kill_after_kill_just_after_an_answer_resends_nothing(endpoint: KillingEndpoint, tmp_path: Path) -> None:
    """Five processes in a row killed just after counting their sixth answer, the replies of the cache writer's last
    spell not committed yet: every resume finds them all in the cache."""
    out = tmp_path / "out"
    served: list[str] = []
    for number in range(6):
        process = run_eval(endpoint, out, resume=number > 0, kill=kill_point(COUNT, 6, "after") if number < 5 else None)
        assert process.code == (0 if number == 5 else -signal.SIGKILL), process.output
        assert sent_again(served, process.served) == 0
        served += process.served
    assert process.unknown == 0 and process.sent == len(served)


def test_a_kill_with_several_requests_in_flight_counts_each_as_served_or_unknown(
    endpoint: KillingEndpoint, reference: tuple[Path, EvalProcess], tmp_path: Path
) -> None:
    """Two users at once, up to three requests in flight: the endpoint kills the client as one arrives and answers
    the others to a dead client. Each is then counted as unknown; none counted as answered is sent again."""
    out = tmp_path / "out"
    killed = run_eval(endpoint, out, resume=False, kill=at_request(9), width=3)
    assert killed.code == -signal.SIGKILL and killed.unanswered == 1, killed.output
    assert killed.sent <= len(killed.served)
    assert killed.sent + killed.unknown >= len(killed.served) + killed.unanswered
    resumed = run_eval(endpoint, out, resume=True, width=3)
    assert resumed.code == 0, resumed.output
    assert sent_again(killed.served, resumed.served) <= killed.unknown - killed.unanswered
    assert _results(out) == _results(reference[0])
