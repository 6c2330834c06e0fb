"""Speculative episodes: users a candidate may need later, played now beside the ones it needs (``episode.speculate``).

A speculative episode is played into a store of its own (``<run_dir>/speculative/<candidate>/<split>/``), which no
summary, evidence, score or MLflow row reads: until the loop asks for that user, nothing the run reports can see it.
When an evaluation asks for the user, it waits for the episode and moves its folder into the candidate's store (one
rename: a kill leaves it whole in one place or the other), where the evaluation finds its periods finished. Episodes
the loop turns out not to need are cancelled; their calls are what the time saved costs (the evolution benchmark
shows both). An episode is played by the same code either way, so a run's results do not depend on speculation.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path

from memevo.environments.store import RunStore
from memevo.evolve.candidates import Candidate

Key = tuple[str, str, str]
"""(candidate id, split, user id)"""
Play = Callable[[Candidate, str, RunStore], Awaitable[object]]
"""Plays one user of a candidate into a store (the evaluator's episode, with its user slot)."""


class Speculator:
    """The speculative episodes in flight, and their hand-over to the evaluations that ask for them."""

    def __init__(self, root: Path, play: Play) -> None:
        self.root = root / "speculative"
        self.play = play
        self._tasks: dict[Key, asyncio.Task[object]] = {}

    def store(self, candidate_id: str, split: str) -> RunStore:
        return RunStore(self.root / candidate_id / split, owner=self.root / candidate_id)

    def start(self, candidate: Candidate, split: str, user_ids: Iterable[str], *, needed: Callable[[str], bool]) -> None:
        """Play these users now, except those already speculated or that ``needed`` says an evaluation has (or
        is playing)."""
        for user_id in user_ids:
            key = (candidate.id, split, user_id)
            if key not in self._tasks and not needed(user_id):
                self._tasks[key] = asyncio.ensure_future(self.play(candidate, user_id, self.store(candidate.id, split)))

    async def adopt(self, candidate_id: str, split: str, user_id: str, target: RunStore) -> None:
        """Before an evaluation plays a user: its speculative episode, if any, once finished (or failed: the
        evaluation then meets the failure again), moved into ``target`` unless that has the user already."""
        task = self._tasks.pop((candidate_id, split, user_id), None)
        if task is not None:
            await asyncio.gather(task, return_exceptions=True)
        source, destination = self.store(candidate_id, split).user_dir(user_id), target.user_dir(user_id)
        if source.is_dir() and not destination.exists():
            destination.parent.mkdir(parents=True, exist_ok=True)
            os.rename(source, destination)

    async def cancel(self, candidate_ids: Iterable[str] | None = None, *, keep_split: str | None = None) -> None:
        """Stop the speculative episodes of these candidates (all: None), except those of ``keep_split``; their
        finished periods stay on disk, for an evaluation that may still ask for them."""
        chosen = None if candidate_ids is None else set(candidate_ids)
        stopping = [self._tasks.pop(key) for key in list(self._tasks)
                    if (chosen is None or key[0] in chosen) and key[1] != keep_split]
        for task in stopping:
            task.cancel()
        await asyncio.gather(*stopping, return_exceptions=True)
