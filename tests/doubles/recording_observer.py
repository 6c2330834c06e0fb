"""A test double of a tracker: an observer module that records every event it is handed, and links each candidate
to a run of its own (what a new tracker adds: this module and one registry entry)."""

from __future__ import annotations

from memevo.evolve.events import Event, Observer, RunContext

RECORDED: list[Event] = []


class RecordingObserver(Observer):
    def notify(self, event: Event) -> None:
        RECORDED.append(event)

    def run_link(self, generation: int, label: str) -> str | None:
        return f"recorded-{label}"


def make_observer(context: RunContext) -> Observer:
    return RecordingObserver()
