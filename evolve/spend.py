"""What a run has spent, across the processes of a resumed run, and whether a budget is used up."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol

from memevo.agents.llm.accounting import RoleUsage, UsageReport
from memevo.environments.store import write_json_atomic
from memevo.evolve.config import EvolveConfig


class Accounted(Protocol):
    """Anything with the hub's ``accounting`` (the hub itself, or a test double)."""

    accounting: Any


def add_usage(first: UsageReport, second: UsageReport) -> UsageReport:
    roles = set(first.by_role) | set(second.by_role)
    return UsageReport(
        by_role={
            role: first.by_role.get(role, RoleUsage()).plus(second.by_role.get(role, RoleUsage())) for role in roles
        }
    )


class Spend:
    """Usage of this run across processes: what earlier processes recorded plus this one's delta.

    The run saves it at every checkpoint, right after a result is written (each finished period,
    evaluation, plan, upper-bound table, generation) with no await in between, so every call behind a
    saved result is in ``spend.json``. A killed process loses only the calls made since its last
    checkpoint, and those belong to unsaved work that the resumed process redoes and counts again. So
    with one user and one candidate at a time and no response cache, a killed-and-resumed run reports
    exactly the usage of an uninterrupted one. With concurrency it may report more (work in flight at a
    checkpoint is counted when saved and again when redone: money really spent), never fewer calls;
    with the response cache, redone calls are cache hits, which cost no dollars.
    """

    def __init__(self, run_dir: Path, hub: Accounted) -> None:
        self.path = run_dir / "spend.json"
        self.before = (
            UsageReport.model_validate_json(self.path.read_text(encoding="utf-8"))
            if self.path.exists()
            else UsageReport()
        )
        self.hub = hub
        self.start = hub.accounting.report()

    def total(self) -> UsageReport:
        return add_usage(self.before, self.hub.accounting.report().minus(self.start))

    def save(self, path: Path | None = None) -> None:
        """Save the spend so far (to ``spend.json``, or also to a checkpoint's own ``path``)."""
        payload = json.loads(self.total().model_dump_json())
        write_json_atomic(self.path, payload)
        if path is not None:
            write_json_atomic(path, payload)

    def exceeded(self, config: EvolveConfig) -> str | None:
        """Which budget is spent, if any (calls count requests that reached an endpoint)."""
        total = self.total().total()
        budget = config.budget
        if budget.max_calls is not None and total.calls - total.cache_hits >= budget.max_calls:
            return f"call budget ({budget.max_calls})"
        if budget.max_tokens is not None and total.prompt_tokens + total.completion_tokens >= budget.max_tokens:
            return f"token budget ({budget.max_tokens})"
        if budget.max_dollars is not None and total.dollars >= budget.max_dollars:
            return f"dollar budget ({budget.max_dollars})"
        return None
