"""Numbers in words for the terminal: each line says what its figures mean, so no reader has to guess.

An unpriced model is not shown as "$0.0000", and a generation is summarised in one line (candidates, what was
kept, the objective, the spend). Scores themselves are worded by ``memevo.environments.score_text``, shared with ``memevo eval``.
"""

from __future__ import annotations

from memevo.agents.llm.accounting import RoleUsage, dollars_text


def spend_line(usage: RoleUsage) -> str:
    """Calls, tokens and dollars; requests in flight at a kill and those the run cancelled (a pruned or stopped play)
    are named apart, since their answer and cost are not known."""
    tokens = usage.prompt_tokens + usage.completion_tokens
    unknown = f", {usage.unknown_calls} unknown: in flight at a kill" if usage.unknown_calls else ""
    unknown += f", {usage.cancelled_calls} cancelled by the run" if usage.cancelled_calls else ""
    return f"{usage.calls} calls ({usage.cache_hits} cached{unknown}), {tokens} tokens, {dollars_text(usage)}"


def proposals_line(generation: int, *, prompt_candidates: int, tuning_candidates: int, proposals: int,
                   rejected: int, repaired: int, duplicates: int = 0) -> str:
    """What a generation will evaluate, saying which candidates change only hyperparameters (and how many
    proposals repeated a known policy, when some did)."""
    kinds = f"{prompt_candidates} with a new prompt, {tuning_candidates} hyperparameter-only"
    repeated = f", {duplicates} repeated a known policy" if duplicates else ""
    return (f"generation {generation}: {prompt_candidates + tuning_candidates} candidate(s) ({kinds}) from "
            f"{proposals} prompt proposal(s) ({rejected} rejected, {repaired} repaired{repeated})")


def generation_line(generation: int, *, candidates: int, pruned: int, generation_best: float | None, kept: str,
                    improved: bool, kept_objective: float, usage: RoleUsage) -> str:
    """The one line a generation leaves in the terminal: its best validation score against the kept one."""
    if generation_best is not None:
        best = f"{generation_best:.3f}"
    else:
        best = "n/a (no candidate)" if candidates == 0 else "n/a (no candidate reached validation)"
    verdict = "improved" if improved else "no improvement"
    return (f"generation {generation}: {candidates} candidate(s), {pruned} pruned, best validation {best}; "
            f"{verdict}, kept {kept} (validation {kept_objective:.3f}); spend so far {spend_line(usage)}")
