"""A test double of a tracker's ablation observer (``recording_tracker``): it records every event it is handed and
gives each evolution a run of its own."""

from __future__ import annotations

from pathlib import Path

from memevo.evolve.ablation.events import AblationEvent, AblationObserver

RECORDED: list[AblationEvent] = []


class RecordingAblationObserver(AblationObserver):
    def notify(self, event: AblationEvent) -> None:
        RECORDED.append(event)

    def evolution_run(self, folder: Path) -> str | None:
        return f"recorded-{folder.parent.name}-{folder.name}"
