"""The per-question CSV tables an evaluation writes (``questions.csv``): one row per question asked, with its score
and category beside the pass/fail flag, so a free-text answer's partial credit (an F1 of 0.67) is not shown only as
``correct 0``.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from memevo.environments.records import QARecord

REPLAY_COLUMNS = ("user_id", "question_index", "category", "scoring", "score", "correct", "format_error", "answer",
                  "gold_answer", "choice", "gold")
"""A replayed benchmark's ``questions.csv``."""


def score_columns(record: QARecord) -> dict[str, Any]:
    """The question's credit in [0, 1] (``QARecord.value``: a free-text score, else 1 or 0) and its category."""
    return {"score": record.value, "category": record.category}


def question_rows(records: Iterable[QARecord]) -> list[dict[str, Any]]:
    """Every record as a row: its fields and ``score_columns``."""
    return [{**record.model_dump(mode="json"), **score_columns(record)} for record in records]


def write_csv(path: Path, columns: Sequence[str], rows: Sequence[dict[str, Any]]) -> None:
    """``rows`` under ``columns`` (other keys left out)."""
    with path.open("w", newline="", encoding="utf-8") as file:
        writer = csv.DictWriter(file, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
