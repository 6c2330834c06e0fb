"""An ablation's manifest (``ablation.json``): what ``memevo report`` needs to re-render it, what a resume checks
against, and what its tracker notes to find its records again."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from memevo.core.atomic_files import write_json_atomic
from memevo.core.lazy_model import LazyModel
from memevo.core.run_files import delete_and_resume, read_model
from memevo.evolve.ablation.config import DEFAULT_MIN_EFFECT, REPORT_ONLY_FIELDS

MANIFEST_FILE = "ablation.json"


class AblationManifest(LazyModel):
    """What ``memevo report`` needs to re-render an ablation, and what resume checks against."""

    name: str
    arms: list[str]
    seeds: list[int]
    baseline: str
    ci_method: str
    confidence: float
    config: dict
    tracking_uri: str
    parent_run_id: str | None = None
    """The tracker's run of the ablation, noted by its observer when the ablation starts."""
    summary_stamp: int | None = None
    """Timestamp of the summary's metric rows, noted by the tracker's observer before their first write."""
    min_effect: float = DEFAULT_MIN_EFFECT
    """The difference the report plans seeds for; the latest config's (absent from manifests written before it)."""

    def digest(self) -> str:
        """What identifies this ablation in the store (not the ids and stamps noted as it runs, nor what only the
        report uses)."""
        payload = self.model_dump(mode="json", exclude={"parent_run_id", "summary_stamp", *REPORT_ONLY_FIELDS})
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]

    def save(self, run_dir: Path) -> None:
        write_json_atomic(run_dir / MANIFEST_FILE, self.model_dump(mode="json"))


def load_manifest(run_dir: Path) -> AblationManifest | None:
    remedy = delete_and_resume("it", "it is written again from the config; the summary's MLflow metrics are then "
                               "logged once more, at a new time")
    return read_model(run_dir / MANIFEST_FILE, AblationManifest, remedy=remedy)
