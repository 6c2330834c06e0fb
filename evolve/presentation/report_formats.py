"""``memevo report --format json|csv``: a finished evolution's outcome as data for a script or a spreadsheet rather
than text. JSON holds seed and best on the test users, the paired test, each candidate's row and the spend; CSV holds
the candidate rows (an empty cell: not measured on that split), each with its generation's decision about it as
``decisions.json`` records it."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from memevo.core.errors import UserInputError
from memevo.evolve.api_outcomes import CandidateRow, paired_on_test_users, written_rows
from memevo.evolve.records import EvolutionResult, read_written


def _finished(run_dir: Path) -> EvolutionResult:
    path = run_dir / "result.json"
    if not (run_dir / "config.json").exists():
        raise UserInputError("json and csv report an evolution folder (with config.json); use --format text",
                             source=str(run_dir), field="--format")
    if not path.exists():
        raise UserInputError("the evolution is unfinished (no result.json): resume it, or use --format text",
                             source=str(run_dir), field="--format")
    return read_written(path, EvolutionResult, run_dir)


def evolution_data(run_dir: Path) -> dict[str, Any]:
    """The finished evolution in ``run_dir`` as one JSON-ready mapping."""
    result = _finished(run_dir)
    return {
        "run_dir": str(run_dir), "protocol": result.protocol, "environment": result.environment,
        "objective": result.objective, "stop_reason": result.stop_reason,
        "seed": {"id": result.seed.id, "test": result.seed_scores.model_dump(mode="json")},
        "best": {"id": result.best.id, "prompts": result.best.policy.prompts,
                 "test": result.best_scores.model_dump(mode="json")},
        "test_comparison": paired_on_test_users(result.objective, result.seed_user_scores,
                                                result.best_user_scores).model_dump(mode="json"),
        "candidates": [row.model_dump(mode="json") for row in written_rows(run_dir, result.seed)],
        "usage": result.usage.model_dump(mode="json"),
    }


def report_json(run_dir: Path) -> str:
    return json.dumps(evolution_data(run_dir), indent=2)


def report_csv(run_dir: Path) -> str:
    """One line per candidate: id, label, generation, origin, train, val, its decision (state and words) and its
    cost."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(CandidateRow.model_fields), lineterminator="\n")
    writer.writeheader()
    for row in written_rows(run_dir, _finished(run_dir).seed):
        writer.writerow({name: "" if value is None else value for name, value in row.model_dump().items()})
    return out.getvalue().rstrip("\n")
