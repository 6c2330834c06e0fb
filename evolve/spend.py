"""Whether a run's budget is used up, judged on its usage over all its processes (its usage ledger)."""

from __future__ import annotations

from memevo.agents.llm.accounting import UsageReport
from memevo.evolve.config import BudgetConfig


def budget_exceeded(budget: BudgetConfig, usage: UsageReport) -> str | None:
    """Which budget is spent, if any (calls count requests that reached an endpoint, not cache hits)."""
    total = usage.total()
    if budget.max_calls is not None and total.calls - total.cache_hits >= budget.max_calls:
        return f"call budget ({budget.max_calls})"
    if budget.max_tokens is not None and total.prompt_tokens + total.completion_tokens >= budget.max_tokens:
        return f"token budget ({budget.max_tokens})"
    if budget.max_dollars is not None and total.dollars >= budget.max_dollars:
        return f"dollar budget ({budget.max_dollars})"
    return None
