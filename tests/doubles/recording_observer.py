"""A test double of a tracker's observer (``recording_tracker``): it records every event it is handed, and links
each candidate's trial to a run of its own."""

from __future__ import annotations

from memevo.evolve.events import Event, Observer

RECORDED: list[Event] = []


class RecordingObserver(Observer):
    def notify(self, event: Event) -> None:
        RECORDED.append(event)

    def links(self, generation: int, label: str) -> dict[str, str]:
        return {"recorded_run": f"recorded-{label}"}
