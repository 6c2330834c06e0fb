"""Racing a generation's candidates against their parent on fresh users (``strategy.acceptance: sequential``).

The users: the search users (train and validation together) on which the parent was NOT selected, in an order
seeded by (seed, generation), at most half of all search users (``race_users``). A kept candidate's score on the
users that selected it is inflated by the selection (the winner's curse); its successors are compared with it only
on users where its episodes played no part in keeping it, and because a race takes at most half the users, every
winner leaves at least the other half fresh for its own children.

The rounds: every candidate still in the race plays the next ``chunk`` users, and so does the parent (on the users it
has not played yet: a race that ends after its first round never plays the parent on the second round's users), and
after each round the paired sequential test (``sequential``) looks at each candidate's gains over the parent on all
the users it has played. A candidate the test finds worse leaves the race, and so does one with no mean gain after
any round (futility, ``strategy.futility``, on by default: the error is spent on acceptance only, and a candidate
that shows no gain on the users it has played is not worth more of them); of the others the better half by mean gain stays (successive halving), so a
lucky neutral candidate cannot end a generation before a helpful one has been measured. The race ends when one candidate is left and the test has decided about it, or the users run out;
the winner is the candidate with the highest mean gain among those the test finds better, or none.
"""

from __future__ import annotations

import math
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence

from memevo.core.lazy_model import LazyModel
from memevo.evolve.candidates import Candidate
from memevo.evolve.records import Instance
from memevo.evolve.selection.sequential import SequentialTest, Verdict, paired_gains

Values = Mapping[Instance, float]


class RaceRound(LazyModel):
    users: list[str]
    """The users the parent and every candidate in this round had played by its end."""
    verdicts: dict[str, Verdict]
    """Per candidate id in the round, the test over all its users so far."""
    staying: list[str]
    """The candidates that play the next round (worse ones out, then the better half by mean gain)."""


class RaceRecord(LazyModel):
    """One race: enough to rebuild what it decided (``selected_on``) and to audit every look."""

    parent_id: str
    candidate_ids: list[str]
    users: list[str]
    rounds: list[RaceRound] = []
    winner_id: str | None = None
    stop_reason: str | None = None

    @property
    def selected_on(self) -> list[str]:
        """The users whose episodes decided that the winner is kept."""
        for round_ in reversed(self.rounds):
            if self.winner_id in round_.verdicts:
                return round_.users
        return []


def race_users(search_users: Sequence[str], selected_on: Sequence[str], seed: int, generation: int) -> list[str]:
    """The users a generation races on: fresh for the parent, seeded order, at most half the search users."""
    fresh = sorted(set(search_users) - set(selected_on))
    random.Random(f"race|{seed}|{generation}").shuffle(fresh)
    return fresh[:math.ceil(len(search_users) / 2)]


def looks(n_users: int, chunk: int) -> int:
    return max(1, math.ceil(n_users / chunk))


def _halved(verdicts: Mapping[str, Verdict], order: Sequence[str], futility: bool = True) -> list[str]:
    """Of the candidates in the round, those not found worse and (under ``futility``) with a mean gain so far, at most
    half of the round's candidates (rounded up), the best by mean gain (ties keep the plan's order)."""
    standing = [cid for cid in order
                if verdicts[cid].state != "worse" and (verdicts[cid].mean_gain > 0 or not futility)]
    ranked = sorted(standing, key=lambda cid: -verdicts[cid].mean_gain)
    kept = set(ranked[:math.ceil(len(order) / 2)])
    return [cid for cid in standing if cid in kept]


async def race(
    candidates: Sequence[Candidate],
    parent: Candidate,
    users: Sequence[str],
    *,
    chunk: int,
    test: SequentialTest,
    play: Callable[[Candidate, list[str]], Awaitable[Values]],
    may_start: Callable[[int], str | None],
    record: RaceRecord,
    on_round: Callable[[RaceRecord], None],
    futility: bool = True,
) -> RaceRecord:
    """Run the race (see the module docstring). ``play`` evaluates a candidate or the parent on users (all it has
    played so far, a stored result costs nothing; the parent is asked first in each round); ``may_start(round)`` gives a budget reason to stop before a round, or None;
    ``on_round`` saves the record after each round. Every step depends only on stored results, in a fixed order,
    so a resumed race takes the same path."""
    by_id = {candidate.id: candidate for candidate in candidates}
    staying = [candidate.id for candidate in candidates]
    for index in range(looks(len(users), chunk)):
        stop = may_start(index)
        if stop is not None:
            record.stop_reason = stop
            break
        played = list(users[:(index + 1) * chunk])
        parent_values = await play(parent, played)
        verdicts = {}
        for cid in staying:
            verdicts[cid] = test.verdict(paired_gains(await play(by_id[cid], played), parent_values))
        staying = _halved(verdicts, staying, futility)
        record.rounds.append(RaceRound(users=played, verdicts=verdicts, staying=staying))
        on_round(record)
        decided = len(staying) == 1 and verdicts[staying[0]].state == "better"
        if not staying or decided:
            break
    if record.rounds:
        last = record.rounds[-1]
        better = [cid for cid in last.staying if last.verdicts[cid].state == "better"]
        record.winner_id = max(better, key=lambda cid: last.verdicts[cid].mean_gain, default=None)
    return record
