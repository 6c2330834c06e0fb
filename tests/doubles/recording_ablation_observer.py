"""A test double of a tracker for the ablation: an observer module that records every event it is handed and gives
each evolution a run of its own (what a new tracker for the ablation adds: this module and one registry entry)."""

from __future__ import annotations

from pathlib import Path

from memevo.evolve.ablation.events import AblationContext, AblationEvent, AblationObserver

RECORDED: list[AblationEvent] = []


class RecordingAblationObserver(AblationObserver):
    def notify(self, event: AblationEvent) -> None:
        RECORDED.append(event)

    def evolution_run(self, folder: Path) -> str | None:
        return f"recorded-{folder.parent.name}-{folder.name}"


def make_ablation_observer(context: AblationContext) -> AblationObserver:
    return RecordingAblationObserver()
