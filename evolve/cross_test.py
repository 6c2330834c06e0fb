"""Cross-benchmark evaluation: the seed and the best candidate, evolved on one environment, tested on another's items.

Every item of the test environment's data is a held-out user (evolution never saw it). Its episodes live in the
run folder beside the others (``evals/<candidate>/cross-<environment>/``), resumable per period like every
evaluation, and the scores are kept in ``cross_test.json``, which ``memevo report`` reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memevo.core.lazy_model import LazyModel
from memevo.environments.metrics import Scores
from memevo.environments.score_text import score_lines, scored_figure_key
from memevo.evolve.candidates import Candidate
from memevo.evolve.evaluation import Evaluator
from memevo.evolve.records import read_record, write_record

CROSS_TEST_FILE = "cross_test.json"


class CrossTestResult(LazyModel):
    """Seed and best on the test environment's items."""

    environment: str
    data: str
    seed_id: str
    best_id: str
    seed_scores: Scores
    best_scores: Scores


def cross_split(environment: str) -> str:
    """The split name (and store folder) of a cross-benchmark evaluation."""
    return f"cross-{environment}"


async def cross_test(evaluator: Evaluator, seed: Candidate, best: Candidate, *, environment: str, data: str,
                     run_dir: Path) -> CrossTestResult:
    """Evaluate seed and best on every item of ``evaluator`` (the test environment's, configured as
    ``environment``) and save the result."""
    name = environment
    split, users = cross_split(name), list(evaluator.items)
    scores: dict[str, Scores] = {}
    for candidate in (seed, best):
        await evaluator.evaluate(candidate, split, users)
        scored = evaluator.scores(candidate.id, split, users)
        assert scored is not None, f"{candidate.id} has no finished {split} episodes"
        scores[candidate.id] = scored[0]
    result = CrossTestResult(environment=name, data=data, seed_id=seed.id, best_id=best.id,
                             seed_scores=scores[seed.id], best_scores=scores[best.id])
    write_record(run_dir / CROSS_TEST_FILE, result)
    return result


def read_cross_test(run_dir: Path) -> CrossTestResult | None:
    return read_record(run_dir / CROSS_TEST_FILE, CrossTestResult)


def cross_test_lines(result: CrossTestResult) -> list[str]:
    """The cross-benchmark scores as a report shows them."""
    lines = [f"Cross-benchmark test on {result.environment} ({result.data}, {result.seed_scores.n_users} users, "
             "none seen during evolution):"]
    for label, scores in ((f"seed {result.seed_id[:8]}", result.seed_scores),
                          (f"best {result.best_id[:8]}", result.best_scores)):
        lines += [f"  {label}: {line}" for line in score_lines(scores)]
    return lines


def cross_test_metrics(result: CrossTestResult) -> dict[str, Any]:
    """Flat metrics for the tracker: seed's and best's headline figure on the test environment, named by what it
    is (``cross_amemgym_seed_accuracy``, ``cross_locomo_seed_score_f1``). Both arms were scored on every item of the
    test environment's data, so the name is that data's (``score_text.scored_figure_key``)."""
    prefix, figure = f"cross_{result.environment}", scored_figure_key(result.seed_scores, result.best_scores)
    return {f"{prefix}_{label}_{figure}": scores.accuracy
            for label, scores in (("seed", result.seed_scores), ("best", result.best_scores))}
