"""A run's budgets and spend, judged on its usage over all its processes (its usage ledger)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Protocol

from memevo.agents.llm.accounting import UsageReport
from memevo.core.atomic_files import write_json_atomic
from memevo.core.run_files import delete_and_resume, read_model
from memevo.environments.rundir import UsageLedger
from memevo.evolve.config import BudgetConfig

SPEND_FILE = "spend.json"


def budget_exceeded(budget: BudgetConfig, usage: UsageReport) -> str | None:
    """Which budget is spent, if any (calls count requests that reached an endpoint, not cache hits). A dollar budget
    counts as spent once a call had no price: from then on the dollars spent are not known, so the run cannot tell
    when it would pass the budget."""
    total = usage.total()
    if budget.max_calls is not None and total.calls - total.cache_hits >= budget.max_calls:
        return f"call budget ({budget.max_calls})"
    if budget.max_tokens is not None and total.prompt_tokens + total.completion_tokens >= budget.max_tokens:
        return f"token budget ({budget.max_tokens})"
    if budget.max_dollars is not None and total.dollars >= budget.max_dollars:
        return f"dollar budget ({budget.max_dollars})"
    if budget.max_dollars is not None and total.unpriced_calls:
        return (f"dollar budget ({budget.max_dollars}): {total.unpriced_calls} call(s) had no known price, "
                "set llm.price to count them")
    return None


class Usage(Protocol):
    def report(self) -> UsageReport: ...


class BudgetKeeper:
    """What the loop asks before work starts (is a budget spent?) and the usage it records with a generation."""

    def __init__(self, budget: BudgetConfig, usage: UsageLedger) -> None:
        self.budget = budget
        self.usage: Usage = usage
        """The run's usage over all its processes: its ledger file, or with several workers at once the ledger they
        share (``agents.llm.shared_usage``), so together they stop where one process would."""

    def spent(self) -> str | None:
        """The budget used up so far, if any (see ``budget_exceeded``)."""
        return budget_exceeded(self.budget, self.usage.report())

    def report(self) -> UsageReport:
        """The run's usage so far."""
        return self.usage.report()

    def recorded(self, folder: Path) -> UsageReport:
        """The run's usage when a generation's evaluations ended (``spend.json`` in its ``folder``, beside its
        outcome), saved once: a resume reports the same figures."""
        path = folder / SPEND_FILE
        if not path.exists():
            write_json_atomic(path, json.loads(self.usage.report().model_dump_json()))
        stored = read_model(path, UsageReport, remedy=delete_and_resume("it", "it is written again with the run's "
                                                                                    "usage at that time"))
        assert stored is not None  # written above
        return stored
