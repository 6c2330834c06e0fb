"""Means and paired gains over (user, period) cells, each cell weighted by ``Instance.weight``.

With the objective a score over questions, the weight is the cell's question count, so the mean the loop selects on
is the score pooled over questions, the figure the terminal, the report and the benchmarks' own scorers show. On
AMemGym every cell has the same questions and both aggregations agree; on LoCoMo a conversation's cell holds 100 to
260 questions and they do not.
"""

from __future__ import annotations

from collections.abc import Mapping

from memevo.evolve.records import Instance, cell_weight
from memevo.evolve.weighting import weighted_contributions


def pooled_mean(values: Mapping[Instance, float]) -> float:
    """The weighted mean of the cells' values (0 with no cell)."""
    total = sum(cell_weight(key) for key in values)
    return sum(value * cell_weight(key) for key, value in values.items()) / total if total else 0.0


def paired_gains(candidate: Mapping[Instance, float], parent: Mapping[Instance, float]) -> list[float]:
    """Candidate minus parent on the cells both have, in cell order, each scaled by its weight over the shared cells'
    mean weight: their plain mean is the pooled gain, and a paired test over them tests it."""
    shared = sorted(key for key in candidate if key in parent)
    return weighted_contributions([candidate[key] - parent[key] for key in shared],
                                  [cell_weight(key) for key in shared])
