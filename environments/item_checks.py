"""The checks a replayed benchmark's items pass before anything runs, shared by ``memevo env validate`` (which lists
every problem), ``memevo env stats`` and ``memevo eval`` (which stop at the first): ids that can name a run folder,
one item per id and per folder, and at least one question to score. Each problem names its item and field.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from memevo.core.errors import UserInputError
from memevo.core.lazy_model import LazyModel
from memevo.environments.amemgym.data.ids import folder_name, id_problem


class CheckedItem(Protocol):
    """What the checks read of an item (``replay.ReplayItem`` has it)."""

    @property
    def id(self) -> str: ...

    @property
    def questions(self) -> Sequence[object]: ...


class ItemProblem(LazyModel):
    """One reason the items cannot be run, with the field (``[index].<id field>``) it is about."""

    field: str | None
    message: str

    def describe(self, source: str) -> str:
        """One line naming the file, the field and the problem (``memevo env validate``)."""
        return str(UserInputError(self.message, source=source, field=self.field))


def item_problems(items: Sequence[CheckedItem], *, id_field: str = "id") -> list[ItemProblem]:
    """Every problem of ``items`` in file order; empty when they can be run."""
    problems = []
    first_in_folder: dict[str, int] = {}
    for index, item in enumerate(items):
        field = f"[{index}].{id_field}"
        problem = id_problem(item.id)
        if problem is not None:
            problems.append(ItemProblem(field=field, message=f"item {item.id[:40]!r}: {problem}"))
            continue
        first = first_in_folder.setdefault(folder_name(item.id), index)
        if first != index:
            same = "has the same id as" if items[first].id == item.id else "would share the run folder of"
            problems.append(ItemProblem(field=field, message=f"item {item.id!r} {same} item [{first}] "
                                        f"({items[first].id!r}); every item needs an id of its own"))
    if items and not any(item.questions for item in items):
        problems.append(ItemProblem(field=None, message=f"none of the {len(items)} items has a question to score"))
    return problems


def check_items(items: Sequence[CheckedItem], *, source: str, id_field: str = "id") -> None:
    """Raise the first of ``item_problems`` as a ``UserInputError`` naming ``source``."""
    problems = item_problems(items, id_field=id_field)
    if problems:
        raise UserInputError(problems[0].message, source=source, field=problems[0].field)
