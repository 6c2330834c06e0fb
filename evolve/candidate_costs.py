"""What each candidate cost: the model calls made while its episodes were played, kept per candidate.

A candidate's calls are counted by the context they are made in (``accounting.charged_to``), so candidates played
at once on one hub are told apart. Counted are the calls of its episodes' tasks (agent and simulator), cache hits
included in ``calls`` as everywhere (``cost_calls`` leaves them out). The total is saved as
``evals/<candidate id>/cost.json`` whenever one of its evaluations ends: a resume adds to it, and calls of an
evaluation killed before it ended are not in it. Worker processes take turns with one candidate's evaluations (a
race's rounds): a total saved by another process since this one's last save is counted on from.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memevo.agents.llm.accounting import Accounting, RoleUsage, charged_to, priced_dollars
from memevo.core.atomic_files import write_json_atomic
from memevo.core.run_files import delete_and_resume, read_model

COST_FILE = "cost.json"
COST_REMEDY = delete_and_resume("it", "the candidate's cost counts again from its next evaluation")


def cost_path(run_dir: Path, candidate_id: str) -> Path:
    return run_dir / "evals" / candidate_id / COST_FILE


def saved_cost(run_dir: Path, candidate_id: str) -> RoleUsage | None:
    """The cost saved for a candidate, None when none of its evaluations ended."""
    path = cost_path(run_dir, candidate_id)
    return read_model(path, RoleUsage, remedy=COST_REMEDY) if path.exists() else None


def cost_metrics(usage: RoleUsage | None) -> dict[str, float]:
    """A candidate's cost as metrics: requests that reached an endpoint (cache hits left out), tokens (prompt and
    completion, cache hits included), dollars (left out when every request was unpriced, since 0 would read as
    free); none when nothing was saved."""
    if usage is None:
        return {}
    metrics = {"cost_calls": float(usage.calls - usage.cache_hits),
               "cost_tokens": float(usage.prompt_tokens + usage.completion_tokens)}
    dollars = priced_dollars(usage)
    return metrics if dollars is None else metrics | {"cost_dollars": dollars}


class CandidateCosts:
    """Charges the calls of a candidate's episodes to it, and saves its running total."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self._accountings: dict[str, Accounting] = {}
        self._earlier: dict[str, RoleUsage] = {}
        """What other processes saved, read when this process first charges the candidate (and again when another
        process saved since)."""
        self._written: dict[str, tuple[RoleUsage, RoleUsage]] = {}
        """Per candidate, the total this process last saved and its own calls in it."""

    @contextmanager
    def charged(self, candidate_id: str) -> Iterator[None]:
        """Calls made inside (and in the tasks started inside) count for ``candidate_id``."""
        if candidate_id not in self._accountings:
            self._earlier[candidate_id] = saved_cost(self.run_dir, candidate_id) or RoleUsage()
            self._accountings[candidate_id] = Accounting()
        with charged_to(self._accountings[candidate_id]):
            yield

    def total(self, candidate_id: str) -> RoleUsage | None:
        """The candidate's cost so far (earlier processes' and this one's), None when it was never charged nor
        saved."""
        accounting = self._accountings.get(candidate_id)
        if accounting is None:
            return saved_cost(self.run_dir, candidate_id)
        saved = saved_cost(self.run_dir, candidate_id)
        written, own = self._written.get(candidate_id, (self._earlier[candidate_id], RoleUsage()))
        if saved is not None and saved != written:  # another worker process saved since: count on from its total
            self._earlier[candidate_id] = saved.minus(own)
        return self._earlier[candidate_id].plus(accounting.report().total())

    def save(self, candidate_id: str) -> None:
        """Write the candidate's total so far (called when one of its evaluations ends), under a lock on the
        evaluations' folder: workers may end evaluations of one candidate at once (``user_units``)."""
        path = cost_path(self.run_dir, candidate_id)
        path.parent.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path.parent.parent, os.O_RDONLY)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            usage = self.total(candidate_id)
            if usage is not None:
                write_json_atomic(path, json.loads(usage.model_dump_json()))
                accounting = self._accountings.get(candidate_id)
                if accounting is not None:
                    self._written[candidate_id] = (usage, accounting.report().total())
        finally:
            os.close(descriptor)  # drops the lock
