"""Pairing episodes with the items they ran on."""

from __future__ import annotations

from collections.abc import Sequence

from memevo.environments.amemgym.data.models import Item
from memevo.environments.records import EpisodeResult


def item_lookup(items: Sequence[Item]) -> dict[str, Item]:
    return {item.id: item for item in items}


def item_of(episode: EpisodeResult, by_id: dict[str, Item]) -> Item:
    """The item an episode ran on (episodes are named by item id)."""
    try:
        return by_id[episode.user_id]
    except KeyError:
        raise ValueError(f"episode of user {episode.user_id!r} has no matching item among the items given") from None
