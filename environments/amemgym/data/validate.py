"""Check the invariants of AMemGym data that scoring relies on (reference section A.5).

Severities. ``error`` means a scored question would be wrong or unanswerable (no or several gold
choices, values outside the schema, a state the user never revealed, sessions outside their period,
updates that contradict the states); the CLI exits 2 on any error. ``warning`` flags data that scores
correctly but departs from how AMemGym builds it (fewer than ``min_state_variants`` choices, a wrong
``type`` label, ``update_cnts`` that are not the final totals, stale exposures of variables no question
needs, unsorted sessions, ``id`` different from the profile uuid).

``check_runnable`` is the gate before a run: it raises ``UserInputError`` naming the file and the field
path (``[3].periods``) for the errors that would break a run or silently skip part of it (no users,
duplicate or colliding ids, ids that cannot name a run folder (``data.ids``), no periods, no questions, a question without a gold choice), and lets the
rest (AMemGym's own data has warnings) through to ``memevo env validate``.

Rules (the ``rule`` field): item-id, schema, periods, questions, period-dates, state, updates, update-counts, session-time,
session-order, exposure, question, choice, gold, variants, choice-type.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterator
from typing import Literal

from memevo.core.errors import UserInputError
from memevo.core.lazy_model import LazyModel
from memevo.environments.amemgym.data.ids import folder_name, id_problem, is_mapped
from memevo.environments.amemgym.data.models import Item, Period, Question
from memevo.environments.amemgym.data.times import parse_time

Severity = Literal["error", "warning"]
DATE_FORMAT = "%Y-%m-%d"
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"


class Violation(LazyModel):
    """One broken invariant; ``period``/``question`` are 0-based indices, ``None`` when not specific;
    ``field`` the path in the data file (``[3].id``) when the rule is about one field of one item."""

    item_id: str
    period: int | None = None
    question: int | None = None
    rule: str
    message: str
    severity: Severity = "error"
    field: str | None = None

    def describe(self) -> str:
        """One line naming item, period and question (or the field), for the command line."""
        shown = self.item_id if len(self.item_id) <= 40 else self.item_id[:37] + "..."
        where = [f"item {shown!r}" if self.field else f"item {shown}"]
        if self.field is not None:
            where.append(f"field '{self.field}'")
        if self.period is not None:
            where.append(f"period {self.period}")
        if self.question is not None:
            where.append(f"question {self.question}")
        return f"{self.severity.upper()} [{self.rule}] {', '.join(where)}: {self.message}"


def validate_items(items: list[Item], *, min_state_variants: int = 4) -> list[Violation]:
    """Every violation in ``items``, in item order; an empty list means the data is valid."""
    violations = list(_id_violations(items))
    counts = Counter(item.id for item in items)
    for item_id in sorted(key for key, n in counts.items() if n > 1):
        violations.append(Violation(item_id=item_id, rule="item-id", message=f"id used by {counts[item_id]} items"))
    folders: dict[str, list[str]] = {}
    for item_id in counts:
        folders.setdefault(folder_name(item_id), []).append(item_id)
    for name, ids in folders.items():
        if len(ids) > 1:
            violations.append(Violation(item_id=ids[1], rule="item-id", message=f"ids {ids} collide: all are stored "
                                        f"in the run folder 'users/{name}'; rename all but one"))
    for item in items:
        violations.extend(_ItemChecker(item, min_state_variants).run())
    return violations


def _id_violations(items: list[Item]) -> Iterator[Violation]:
    """Ids that cannot name a run folder (errors), and ids whose folder has another name (warnings: the
    mapping shown, ``data.ids``)."""
    for number, item in enumerate(items):
        problem = id_problem(item.id)
        if problem is not None:
            yield Violation(item_id=item.id, rule="item-id", message=problem, field=f"[{number}].id")
        elif is_mapped(item.id):
            yield Violation(item_id=item.id, rule="item-id", field=f"[{number}].id", severity="warning",
                            message=f"stored in the run folder 'users/{folder_name(item.id)}' (characters other than "
                            "letters, digits, '.', '_' and '-' become '_')")


RUN_BREAKING_RULES = ("item-id", "periods", "questions", "question", "gold")
"""Rules whose errors stop a run before it starts: each would crash it or leave part of it unscored."""


def check_runnable(items: list[Item], *, source: str) -> None:
    """Raise ``UserInputError`` (file ``source``, field ``[index].path``) for data a run cannot use."""
    if not items:
        raise UserInputError("holds no users", source=source)
    first: dict[str, int] = {}
    for number, item in enumerate(items):
        if item.id in first:
            raise UserInputError(f"id {item.id!r} is used by items {first[item.id]} and {number}", source=source,
                                 field=f"[{number}].id")
        first[item.id] = number
    for violation in validate_items(items):
        if violation.severity == "error" and violation.rule in RUN_BREAKING_RULES:
            field = violation.field or _field_of(first[violation.item_id], violation)
            raise UserInputError(violation.message if violation.field else violation.describe(), source=source,
                                 field=field)


_RULE_FIELDS = {"item-id": "id", "periods": "periods", "questions": "qas", "question": "required_info",
                "gold": "answer_choices"}


def _field_of(number: int, violation: Violation) -> str:
    field = _RULE_FIELDS[violation.rule]
    return f"[{number}].qas[{violation.question}].{field}" if violation.question is not None else f"[{number}].{field}"


def has_errors(violations: list[Violation]) -> bool:
    """Whether any violation makes the data unusable for scoring."""
    return any(v.severity == "error" for v in violations)


class _ItemChecker:
    """Checks one item; each ``_check_*`` method yields the violations of one rule family."""

    def __init__(self, item: Item, min_state_variants: int) -> None:
        self.item = item
        self.min_state_variants = min_state_variants
        self.schema = item.state_schema

    def _v(self, rule: str, message: str, *, period: int | None = None, question: int | None = None,
           severity: Severity = "error") -> Violation:
        return Violation(item_id=self.item.id, period=period, question=question, rule=rule, message=message,
                         severity=severity)

    def run(self) -> Iterator[Violation]:
        yield from self._check_identity()
        yield from self._check_schema()
        yield from self._check_period_dates()
        for index, period in enumerate(self.item.periods):
            yield from self._check_state(index, period)
            yield from self._check_updates(index, period)
            yield from self._check_sessions(index, period)
        yield from self._check_update_counts()
        yield from self._check_exposure()
        for index, question in enumerate(self.item.qas):
            yield from self._check_question(index, question)

    def _check_identity(self) -> Iterator[Violation]:
        if self.item.id != self.item.user_profile.uuid:
            yield self._v("item-id", f"id differs from user_profile.uuid {self.item.user_profile.uuid!r}",
                          severity="warning")

    def _check_schema(self) -> Iterator[Violation]:
        if not self.schema:
            yield self._v("schema", "state_schema is empty")
        for key, values in self.schema.items():
            if len(values) < 2:
                yield self._v("schema", f"variable {key!r} has fewer than 2 values")
            duplicates = sorted(value for value, n in Counter(values).items() if n > 1)
            if duplicates:
                yield self._v("schema", f"variable {key!r} repeats values {duplicates}")
        if not self.item.periods:
            yield self._v("periods", "item has no periods")
        if not self.item.qas:
            yield self._v("questions", "item has no questions")

    def _check_period_dates(self) -> Iterator[Violation]:
        if _parse(self.item.start_time, DATE_FORMAT) is None:
            yield self._v("period-dates", f"start_time {self.item.start_time!r} is not YYYY-MM-DD")
        previous_end = None
        for index, period in enumerate(self.item.periods):
            end = _parse(period.period_end, DATE_FORMAT)
            if end is None:
                yield self._v("period-dates", f"period_end {period.period_end!r} is not YYYY-MM-DD", period=index)
            if index == 0:
                if period.period_start is not None:
                    yield self._v("period-dates", "period 0 must have period_start null", period=0)
                if period.period_end != self.item.start_time:
                    yield self._v("period-dates", f"period 0 ends {period.period_end!r}, not at start_time "
                                  f"{self.item.start_time!r}", period=0)
            else:
                start = _parse(period.period_start, DATE_FORMAT) if period.period_start else None
                if start is None:
                    yield self._v("period-dates", f"period_start {period.period_start!r} is not YYYY-MM-DD",
                                  period=index)
                elif previous_end is not None and start != previous_end:
                    yield self._v("period-dates", "period_start differs from the previous period_end", period=index)
                if start is not None and end is not None and end <= start:
                    yield self._v("period-dates", "period_end is not after period_start", period=index)
            previous_end = end

    def _check_state(self, index: int, period: Period) -> Iterator[Violation]:
        missing = [key for key in self.schema if key not in period.state]
        if missing:
            yield self._v("state", f"state lacks schema variables {missing}", period=index)
        for key, value in period.state.items():
            if key not in self.schema:
                yield self._v("state", f"state has unknown variable {key!r}", period=index)
            elif value not in self.schema[key]:
                yield self._v("state", f"state {key}={value!r} is not a schema value", period=index)

    def _check_updates(self, index: int, period: Period) -> Iterator[Violation]:
        if index == 0:
            for key in self.schema:
                update = period.updates.get(key)
                if update is None or update.old is not None or update.new != period.state.get(key):
                    yield self._v("updates", f"period 0 must list {key!r} with old null and new equal to the "
                                  "state", period=0)
            return
        before = self.item.periods[index - 1].state
        for key, update in period.updates.items():
            if update.old != before.get(key) or update.new != period.state.get(key) or update.old == update.new:
                yield self._v("updates", f"update of {key!r} ({update.old!r} -> {update.new!r}) does not match the "
                              "previous and current states", period=index)
        for key, value in period.state.items():
            if key in before and before[key] != value and key not in period.updates:
                yield self._v("updates", f"{key!r} changed without an update entry", period=index)

    def _check_update_counts(self) -> Iterator[Violation]:
        totals = {key: 0 for key in self.schema}
        for period in self.item.periods[1:]:
            for key in period.updates:
                totals[key] = totals.get(key, 0) + 1
        for index, period in enumerate(self.item.periods):
            counts = {key: period.update_cnts.get(key, 0) for key in totals}
            if counts != totals:
                yield self._v("update-counts", f"update_cnts {period.update_cnts} are not the final totals {totals}",
                              period=index, severity="warning")

    def _check_sessions(self, index: int, period: Period) -> Iterator[Violation]:
        start = _parse(period.period_start, DATE_FORMAT) if period.period_start else None
        end = _parse(period.period_end, DATE_FORMAT)
        times = []
        for number, session in enumerate(period.sessions):
            moment = _parse(session.session_time, TIME_FORMAT)
            if moment is None:
                yield self._v("session-time", f"session {number}: session_time {session.session_time!r} is not "
                              "'YYYY-MM-DD HH:MM:SS'", period=index)
                continue
            times.append(moment)
            day = moment.date()
            outside = (end is not None and day > end.date()) or (start is not None and day <= start.date())
            if outside or (index > 0 and start is None):
                yield self._v("session-time", f"session {number} at {session.session_time} lies outside the period "
                              f"({period.period_start}, {period.period_end}]", period=index)
            for key, value in session.exposed_states.items():
                if value not in self.schema.get(key, []):
                    yield self._v("exposure", f"session {number} exposes {key}={value!r}, not a schema value",
                                  period=index)
        if times != sorted(times):
            yield self._v("session-order", "sessions are not in time order", period=index, severity="warning")

    def _check_exposure(self) -> Iterator[Violation]:
        """The latest value revealed up to period p must equal that period's state (A.5)."""
        required = {key for question in self.item.qas for key in question.required_info}
        latest: dict[str, str] = {}
        for index, period in enumerate(self.item.periods):
            for session in period.sessions:
                latest.update(session.exposed_states)
            for key in self.schema:
                if key not in period.state:
                    continue
                severity: Severity = "error" if key in required else "warning"
                if key not in latest:
                    yield self._v("exposure", f"{key!r} has never been revealed by period {index}", period=index,
                                  severity=severity)
                elif latest[key] != period.state[key]:
                    yield self._v("exposure", f"{key!r} was last revealed as {latest[key]!r} but the state is "
                                  f"{period.state[key]!r}", period=index, severity=severity)

    def _check_question(self, index: int, question: Question) -> Iterator[Violation]:
        unknown = [key for key in question.required_info if key not in self.schema]
        if unknown or not question.required_info:
            yield self._v("question", f"required_info {question.required_info} has keys outside the schema: {unknown}",
                          question=index)
            return
        arity = len(question.required_info)
        tuples = []
        for number, choice in enumerate(question.answer_choices):
            if len(choice.state) != arity:
                yield self._v("choice", f"choice {number} has {len(choice.state)} values for {arity} required "
                              "variables", question=index)
                continue
            for key, value in zip(question.required_info, choice.state, strict=True):
                if value not in self.schema[key]:
                    yield self._v("choice", f"choice {number}: {key}={value!r} is not a schema value", question=index)
            tuples.append(tuple(choice.state))
        repeated = sorted(t for t, n in Counter(tuples).items() if n > 1)
        if repeated:
            yield self._v("choice", f"choices repeat states {[list(t) for t in repeated]}", question=index)
        yield from self._check_gold(index, question)
        if len(question.answer_choices) < self.min_state_variants:
            yield self._v("variants", f"{len(question.answer_choices)} choices, fewer than min_state_variants="
                          f"{self.min_state_variants}", question=index, severity="warning")

    def _check_gold(self, index: int, question: Question) -> Iterator[Violation]:
        visited = set()
        for number, period in enumerate(self.item.periods):
            if any(key not in period.state for key in question.required_info):
                continue  # already reported by the state rule
            target = [period.state[key] for key in question.required_info]
            visited.add(tuple(target))
            matches = sum(choice.state == target for choice in question.answer_choices)
            if matches != 1:
                what = "no answer choice" if matches == 0 else f"{matches} answer choices"
                yield self._v("gold", f"{what} match the state {target}", period=number, question=index)
        for number, choice in enumerate(question.answer_choices):
            expected = "experience" if tuple(choice.state) in visited else "random"
            if choice.type != expected:
                yield self._v("choice-type", f"choice {number} is typed {choice.type!r} but should be {expected!r}",
                              question=index, severity="warning")


def _parse(text: str | None, fmt: str) -> dt.datetime | None:
    return parse_time(text, fmt) if text is not None else None
