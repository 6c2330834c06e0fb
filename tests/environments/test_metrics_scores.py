"""Every metric formula against hand-computed cases on a hand-made item."""

from __future__ import annotations

import json

import pytest

from memevo.agents.buffered import WriteCounters
from memevo.environments.amemgym.data.models import (
    AnswerChoice,
    Item,
    Period,
    Question,
    Session,
    StateUpdate,
    UserProfile,
)
from memevo.environments.metrics import (
    NoMemoryEntry,
    NoMemoryTable,
    UpperBoundEntry,
    UpperBoundTable,
    compute_no_memory,
    compute_upper_bound,
    failure_split,
    random_baseline,
    score_episodes,
    user_scores,
    write_position,
)
from memevo.environments.metrics.scores import cells, mean_of_ratios, pooled_ratio
from memevo.environments.records import EpisodeResult, PeriodResult, ProbeRecord, QARecord
from tests.doubles.scripted_llm import ScriptedLLM

STATES = [{"a": "a1", "b": "b1"}, {"a": "a2", "b": "b1"}, {"a": "a2", "b": "b2"}]
UPDATES = [{"a": ("", "a1"), "b": ("", "b1")}, {"a": ("a1", "a2")}, {"b": ("b1", "b2")}]


def hand_item(item_id: str = "h") -> Item:
    """Period states: (a1,b1) -> (a2,b1) -> (a2,b2). Q0 needs (a,b) with 4 choices; Q1 and Q2 need (a)."""
    periods = [
        Period(
            period_start=None if p == 0 else f"202{p - 1}-01-02",
            period_end=f"202{p}-01-01",
            sessions=[Session(exposed_states=STATES[p], query="hello", session_time=f"202{p}-01-01 10:00:00")],
            state=STATES[p],
            updates={k: StateUpdate(old=old or None, new=new) for k, (old, new) in UPDATES[p].items()},
            update_cnts={"a": 1, "b": 1},
        )
        for p in range(3)
    ]

    def choices(*states: list[str]) -> list[AnswerChoice]:
        return [AnswerChoice(state=s, answer=f"do {'+'.join(s)}", type="experience") for s in states]

    qas = [
        Question(query="Q0?", required_info=["a", "b"],
                 answer_choices=choices(["a1", "b1"], ["a2", "b1"], ["a2", "b2"], ["a3", "b2"])),
        Question(query="Q1?", required_info=["a"], answer_choices=choices(["a1"], ["a2"])),
        Question(query="Q2?", required_info=["a"], answer_choices=choices(["a2"], ["a1"], ["a3"])),
    ]
    profile = UserProfile(uuid=item_id, age=30, gender="male", marital_status="single", education_level="x",
                          occupation="y", formatted_str="z")
    return Item(id=item_id, start_time="2020-01-01", user_profile=profile,
                state_schema={"a": ["a1", "a2", "a3"], "b": ["b1", "b2"]}, periods=periods, qas=qas)


def qa(period: int, question: int, correct: bool, *, user: str = "h", format_error: bool = False) -> QARecord:
    gold = hand_item().qas[question].gold_index(STATES[period]) + 1
    return QARecord(user_id=user, period=period, question_index=question, prompt="p", raw_reply="r",
                    choice=None if format_error else (gold if correct else (gold % 2) + 1), gold=gold, n_choices=4,
                    correct=correct, format_error=format_error)


def probe(period: int, question: int, **ok: bool) -> ProbeRecord:
    keys = hand_item().qas[question].required_info
    truth = {k: STATES[period][k] for k in keys}
    return ProbeRecord(user_id="h", period=period, question_index=question, truth=truth,
                       predicted={k: truth[k] if ok.get(k, True) else "wrong" for k in keys},
                       correct={k: ok.get(k, True) for k in keys})


def episode(results: dict[int, list[QARecord]], probes: dict[int, list[ProbeRecord]] | None = None,
            user: str = "h") -> EpisodeResult:
    return EpisodeResult(user_id=user, policy_id="pid", periods=[
        PeriodResult(user_id=user, period=p, qa=records, probes=(probes or {}).get(p, []))
        for p, records in results.items()
    ])


def table(item_id: str = "h") -> UpperBoundTable:
    """Q0 right at (a1,b1) and (a2,b1), wrong at (a2,b2); Q1 right at (a1) only; Q2 wrong at (a1)."""
    rows = [(0, ["a1", "b1"], True), (0, ["a2", "b1"], True), (0, ["a2", "b2"], False),
            (1, ["a1"], True), (1, ["a2"], False), (2, ["a1"], False), (2, ["a2"], True)]
    return UpperBoundTable(entries=[UpperBoundEntry(item_id=item_id, question_index=q, state=s, correct=c)
                                    for q, s, c in rows])


def formula(eps: list[EpisodeResult], items: list[Item], ub: UpperBoundTable
            ) -> tuple[tuple[float | None, float | None], list[tuple[float | None, float | None]]]:
    """(AMemGym's mean of ratios, pooled ratio) as the formulas read, overall and per period: these runs are
    too small for ``score_episodes`` to report either (their upper bounds are not measurably above random)."""
    group = cells(eps, items, ub)
    periods = sorted({cell.period for cell in group})
    by_period = [[cell for cell in group if cell.period == period] for period in periods]
    return (mean_of_ratios(group), pooled_ratio(group)), [(mean_of_ratios(g), pooled_ratio(g)) for g in by_period]


def test_random_baseline_is_share_of_choices_matching_gold() -> None:
    item = hand_item()
    assert random_baseline(item, 0, 0) == 0.25
    assert random_baseline(item, 1, 1) == 0.5
    assert random_baseline(item, 2, 2) == pytest.approx(1 / 3)
    duplicated = item.model_copy(deep=True)
    duplicated.qas[1].answer_choices.append(duplicated.qas[1].answer_choices[0])
    assert random_baseline(duplicated, 0, 1) == pytest.approx(2 / 3)


def test_upper_bound_is_keyed_by_question_and_state() -> None:
    item, ub = hand_item(), table()
    assert ub.score(item, 0, 1) == 1.0  # Q1 with a=a1
    assert ub.score(item, 0, 2) == 0.0  # Q2 with the same tuple (a1): its own entry, not Q1's
    assert ub.score(item, 1, 0) == 1.0 and ub.score(item, 2, 0) == 0.0
    assert UpperBoundTable.model_validate_json(ub.model_dump_json()).score(item, 0, 2) == 0.0
    with pytest.raises(KeyError, match="no entry"):
        UpperBoundTable(entries=[]).score(item, 0, 0)


def test_memory_score_is_amemgyms_mean_of_ratios_and_keeps_a_cell_with_upper_bound_below_random() -> None:
    # p0: both right, acc 1, rand (.25+.5)/2=.375, ub 1    -> ratio 1
    # p1: both wrong, acc 0, rand .375, ub (1+0)/2=.5      -> ratio (0-.375)/(.5-.375) = -3
    # p2: Q0 right, acc .5, rand .375, ub (0+0)/2=0 < rand -> kept, sign-flipped: (.5-.375)/(0-.375) = -1/3
    # AMemGym: mean(1, -3, -1/3) = -7/9. Pooled over the 6 questions: (.5 - .375) / (.5 - .375) = 1
    ep = episode({0: [qa(0, 0, True), qa(0, 1, True)], 1: [qa(1, 0, False), qa(1, 1, False)],
                  2: [qa(2, 0, True), qa(2, 1, False)]})
    scores = score_episodes([ep], [hand_item()], table())
    assert scores.accuracy == 0.5 and scores.random_baseline == 0.375
    assert scores.upper_bound == pytest.approx(0.5)
    (amemgym, pooled), per_period = formula([ep], [hand_item()], table())
    assert amemgym == pytest.approx(-7 / 9)
    assert (scores.n_memory_points, scores.n_excluded, scores.n_inverted) == (3, 0, 1)
    assert pooled == pytest.approx(1.0)
    assert per_period == [(pytest.approx(1.0),) * 2, (pytest.approx(-3.0),) * 2, (pytest.approx(-1 / 3),) * 2]
    # An upper bound of 0.5 against random 0.375 on 6 questions is no measurement: both scores are n/a.
    assert scores.memory_score is None and scores.pooled_memory_score is None
    assert "not above random 0.375 over 6 questions" in (scores.memory_na_reason or "")
    assert [p.accuracy for p in scores.per_period] == [1.0, 0.0, 0.5]
    assert scores.per_period[2].n_inverted == 1 and scores.per_period[2].n_excluded == 0
    assert scores.failure is None and scores.probes is None


def test_only_a_cell_whose_upper_bound_equals_random_exactly_is_excluded_and_counted() -> None:
    # Q2 trimmed to 2 choices, so every cell of Q1+Q2 has rand (.5+.5)/2 = .5.
    item = hand_item()
    item.qas[2].answer_choices = item.qas[2].answer_choices[:2]
    ub = UpperBoundTable(entries=[e for e in table().entries if e.question_index != 2] + [
        UpperBoundEntry(item_id="h", question_index=2, state=["a1"], correct=False),
        UpperBoundEntry(item_id="h", question_index=2, state=["a2"], correct=False)])
    # p0: Q1 ub right (a1), Q2 ub wrong   -> ub .5 == rand .5: excluded (AMemGym: 0/0)
    # p1: Q1 ub wrong (a2), Q2 ub wrong   -> ub 0 < rand: kept, acc .5 -> (.5-.5)/(0-.5) = 0
    # p2: same states as p1, acc 0        -> (0-.5)/(0-.5) = 1
    ep = episode({0: [qa(0, 1, True), qa(0, 2, True)], 1: [qa(1, 1, True), qa(1, 2, False)],
                  2: [qa(2, 1, False), qa(2, 2, False)]})
    scores = score_episodes([ep], [item], ub)
    assert (scores.n_memory_points, scores.n_excluded, scores.n_inverted) == (2, 1, 2)
    (amemgym, pooled), per_period = formula([ep], [item], ub)
    assert amemgym == pytest.approx(0.5)
    assert [m for m, _ in per_period] == [None, pytest.approx(0.0), pytest.approx(1.0)]
    # pooled: acc 3/6 = .5, rand .5, ub 1/6 -> (.5-.5)/(1/6-.5) = 0
    assert pooled == pytest.approx(0.0)
    assert per_period[0][1] is None  # 0/0 is not a number
    assert scores.memory_score is None and scores.per_period[1].pooled_memory_score is None


def test_pooled_score_differs_from_the_mean_of_ratios_on_unequal_cells() -> None:
    # two users, one period each, with 2 and 3 questions
    items = [hand_item("u"), hand_item("v")]
    ub = UpperBoundTable(entries=table("u").entries + table("v").entries)
    eps = [episode({0: [qa(0, 0, True, user="u"), qa(0, 1, True, user="u")]}, user="u"),
           episode({1: [qa(1, 0, True, user="v"), qa(1, 1, False, user="v"), qa(1, 2, False, user="v")]},
                   user="v")]
    # u p0: acc 1, rand .375, ub 1 -> 1.  v p1: acc 1/3, rand (.25+.5+1/3)/3 = 13/36, ub (1+0+1)/3 = 2/3
    #   -> (1/3 - 13/36) / (2/3 - 13/36) = (-1/36) / (11/36) = -1/11. AMemGym mean: (1 - 1/11)/2 = 5/11.
    # pooled over 5 questions: acc 3/5, rand (.25+.5+.25+.5+1/3)/5 = 11/30, ub (1+1+1+0+1)/5 = 4/5
    #   -> (3/5 - 11/30) / (4/5 - 11/30) = (7/30) / (13/30) = 7/13
    (amemgym, pooled), _ = formula(eps, items, ub)
    assert amemgym == pytest.approx(5 / 11)
    assert pooled == pytest.approx(7 / 13)


def test_without_upper_bound_there_is_no_memory_score() -> None:
    scores = score_episodes([episode({0: [qa(0, 0, True)]})], [hand_item()])
    assert scores.memory_score is None and scores.upper_bound is None and scores.n_memory_points == 0


def test_per_period_memory_is_a_mean_over_users_and_overall_over_all_points() -> None:
    items = [hand_item("u"), hand_item("v")]
    ub = UpperBoundTable(entries=table("u").entries + table("v").entries)
    eps = [episode({0: [qa(0, 0, True, user="u"), qa(0, 1, True, user="u")],
                    1: [qa(1, 0, True, user="u"), qa(1, 1, False, user="u")]}, user="u"),
           episode({0: [qa(0, 0, False, user="v"), qa(0, 1, True, user="v")],
                    1: [qa(1, 0, False, user="v"), qa(1, 1, False, user="v")]}, user="v")]
    # u: p0 1.0, p1 (.5-.375)/.125 = 1.0; v: p0 (.5-.375)/.625 = .2, p1 -3.0
    (amemgym, _), per_period = formula(eps, items, ub)
    assert [m for m, _ in per_period] == [pytest.approx(0.6), pytest.approx(-1.0)]
    assert amemgym == pytest.approx((1 + 1 + 0.2 - 3) / 4)
    per_user = user_scores(eps, items, ub)
    assert [u.user_id for u in per_user] == ["u", "v"]
    assert per_user[1].per_period_memory == [pytest.approx(0.2), pytest.approx(-3.0)]
    assert mean_of_ratios(cells([eps[1]], items, ub)) == pytest.approx(-1.4) and per_user[0].accuracy == 0.75
    assert per_user[1].memory_score is None  # 4 questions: the cells' ratios, but no score for the user


def test_format_error_rate() -> None:
    ep = episode({0: [qa(0, 0, False, format_error=True), qa(0, 1, True), qa(0, 2, True)]})
    scores = score_episodes([ep], [hand_item()])
    assert scores.format_error_rate == pytest.approx(1 / 3) and scores.accuracy == pytest.approx(2 / 3)


def test_write_position_is_last_update_up_to_the_period() -> None:
    item = hand_item()
    assert [write_position(item, p, "a") for p in range(3)] == [0, 1, 1]
    assert [write_position(item, p, "b") for p in range(3)] == [0, 0, 2]


def test_write_read_utilisation_split_by_hand() -> None:
    # p0 Q0 wrong, probe a wrong (written at p0, wrong there)             -> W 1
    # p1 Q0 wrong, probes a and b wrong; a written p1 (wrong) -> write;
    #    b written p0 (right at p0) -> read                                 -> W .5, R .5
    # p2 Q0 wrong, both probes right                                         -> U 1
    # Q1 right everywhere. 6 questions: W 1.5/6, R .5/6, U 1/6; sum = 1 - acc.
    ep = episode(
        {p: [qa(p, 0, False), qa(p, 1, True)] for p in range(3)},
        {0: [probe(0, 0, a=False), probe(0, 1)], 1: [probe(1, 0, a=False, b=False), probe(1, 1)],
         2: [probe(2, 0), probe(2, 1)]},
    )
    split = failure_split([ep], [hand_item()])
    assert split is not None
    assert (split.write, split.read, split.utilization) == (pytest.approx(0.25), pytest.approx(0.5 / 6),
                                                           pytest.approx(1 / 6))
    scores = score_episodes([ep], [hand_item()])
    assert scores.failure == split
    assert split.write + split.read + split.utilization == pytest.approx(1 - scores.accuracy)
    assert [(p.failure.write, p.failure.read, p.failure.utilization) for p in scores.per_period] == [
        (0.5, 0.0, 0.0), (0.25, 0.25, 0.0), (0.0, 0.0, 0.5)]


def unreadable(period: int, question: int, *keys: str) -> ProbeRecord:
    """A probe whose ``keys`` (all when none given) could not be read."""
    record = probe(period, question)
    gone = set(keys or record.truth)
    return record.model_copy(update={
        "predicted": {k: None if k in gone else v for k, v in record.predicted.items()},
        "correct": {k: k not in gone for k in record.correct}, "format_error": True})


def test_unreadable_probes_are_never_scored_as_write_failures() -> None:
    # Every probe unreadable (the 48-of-48 case): nothing can be attributed, so no split at all,
    # while the reference's rule would have put every error down to writing.
    ep = episode({p: [qa(p, 0, False), qa(p, 1, True)] for p in range(3)},
                 {p: [unreadable(p, 0), unreadable(p, 1)] for p in range(3)})
    scores = score_episodes([ep], [hand_item()])
    assert scores.failure is None
    assert scores.probes is not None
    assert (scores.probes.n_probes, scores.probes.probe_format_errors, scores.probes.n_incorrect,
            scores.probes.n_attributed, scores.probes.coverage) == (6, 6, 3, 0, 0.0)
    reference = failure_split([ep], [hand_item()], min_coverage=0.0)
    assert reference is not None and (reference.write, reference.read, reference.utilization) == (0, 0, 0)
    assert (reference.amemgym_write, reference.unattributed) == (pytest.approx(0.5), pytest.approx(0.5))


def test_split_over_readable_probes_with_coverage() -> None:
    # As the hand split above, but p1's probe of b at question time is unreadable: that error (.5 W + .5 R
    # before) is unattributed. Coverage 2 of 3 incorrect answers. Reference rule: b unreadable = wrong,
    # written at p0 where it was right -> read, the same as before.
    ep = episode(
        {p: [qa(p, 0, False), qa(p, 1, True)] for p in range(3)},
        {0: [probe(0, 0, a=False), probe(0, 1)],
         1: [unreadable(1, 0, "b").model_copy(update={"predicted": {"a": "wrong", "b": None},
                                                     "correct": {"a": False, "b": False}}), probe(1, 1)],
         2: [probe(2, 0), probe(2, 1)]},
    )
    split = failure_split([ep], [hand_item()], min_coverage=0.5)
    assert split is not None
    assert (split.write, split.read, split.utilization, split.unattributed) == (
        pytest.approx(1 / 6), 0.0, pytest.approx(1 / 6), pytest.approx(1 / 6))
    assert split.coverage == pytest.approx(2 / 3)
    assert (split.amemgym_write, split.amemgym_read, split.amemgym_utilization) == (
        pytest.approx(0.25), pytest.approx(0.5 / 6), pytest.approx(1 / 6))
    assert split.write + split.read + split.utilization + split.unattributed == pytest.approx(0.5)
    assert failure_split([ep], [hand_item()]) is None  # default minimum coverage .9
    coverage = score_episodes([ep], [hand_item()]).probes
    assert coverage is not None and (coverage.probe_format_errors, coverage.n_probes) == (1, 6)


def test_a_readable_write_time_probe_is_needed_too() -> None:
    # p1 Q0 wrong, a unreadable at question time                              -> unattributed.
    # p2 Q0 wrong, a wrong at p2 (readable), but a was written at p1, where it is unreadable -> unattributed.
    ep = episode({1: [qa(1, 0, False)], 2: [qa(2, 0, False)]},
                 {1: [probe(1, 0, a=False)], 2: [probe(2, 0, a=False)]})
    ep.periods[0].probes[0] = unreadable(1, 0, "a").model_copy(update={"predicted": {"a": None, "b": "b1"}})
    split = failure_split([ep], [hand_item()], min_coverage=0.0)
    assert split is not None and split.coverage == 0.0 and split.unattributed == 1.0


def test_failure_split_needs_every_probe() -> None:
    ep = episode({0: [qa(0, 0, False), qa(0, 1, True)]}, {0: [probe(0, 0, a=False)]})
    with pytest.raises(ValueError, match="probe for every question"):
        failure_split([ep], [hand_item()])


async def test_compute_upper_bound_asks_each_question_state_once_and_counts_parse_failures() -> None:
    item = hand_item()

    def handler(messages, role, wants_json):  # type: ignore[no-untyped-def]
        prompt = messages[0]["content"]
        assert wants_json and role == "upper_bound"
        if prompt.startswith("Q2?"):
            return "I cannot say"
        state = json.loads(prompt[prompt.index("{"):prompt.index("}") + 1])
        question = next(q for q in item.qas if prompt.startswith(q.query))
        target = [state[k] for k in question.required_info]
        return json.dumps({"answer": [c.state for c in question.answer_choices].index(target) + 1})

    llm = ScriptedLLM(handler)
    ub = await compute_upper_bound(llm, [item])
    # needed (question, state): Q0 x3, Q1 x2, Q2 x2 = 7, plus one retry for each of Q2's two states
    assert len(ub.entries) == 7 and len(llm.calls) == 9
    assert ub.score(item, 0, 0) == ub.score(item, 1, 1) == 1.0
    assert ub.score(item, 0, 2) == 0.0 and ub.format_error_rate == pytest.approx(2 / 7)
    assert not any(e.random_fallback for e in ub.entries)
    compat = await compute_upper_bound(ScriptedLLM(handler), [item], amemgym_compat=True, seed=3)
    again = await compute_upper_bound(ScriptedLLM(handler), [item], amemgym_compat=True, seed=3)
    assert compat == again  # compat asks every choice of Q2 (as AMemGym did), each reply a random fallback
    assert sum(e.random_fallback for e in compat.entries) == len(item.qas[2].answer_choices)


def test_unparsed_upper_bound_replies_are_counted_once_per_reply() -> None:
    # Q1's reply at state (a2) is unreadable (scored wrong); it serves periods 1 and 2 but is one reply.
    entries = [e.model_copy(update={"format_error": e.question_index == 1 and e.state == ["a2"]})
               for e in table().entries]
    ub = UpperBoundTable(entries=entries)
    assert (ub.format_errors, ub.format_error_rate) == (1, pytest.approx(1 / 7))
    ep = episode({p: [qa(p, 0, True), qa(p, 1, True)] for p in range(3)})
    scores = score_episodes([ep], [hand_item()], ub)
    # replies used: Q0 at 3 states + Q1 at (a1) and (a2) = 5, one unparsed
    assert scores.upper_bound_format_errors == 1
    assert scores.upper_bound_format_error_rate == pytest.approx(1 / 5)
    assert [p.upper_bound_format_errors for p in scores.per_period] == [0, 1, 1]
    assert [p.upper_bound_format_error_rate for p in scores.per_period] == [0.0, 0.5, 0.5]
    assert user_scores([ep], [hand_item()], ub)[0].upper_bound_format_errors == 1
    # the stored form keeps them, and a Scores stored before the fields existed still loads
    assert type(scores).model_validate_json(scores.model_dump_json()) == scores
    legacy = scores.model_dump(mode="json", exclude={"upper_bound_format_errors", "upper_bound_format_error_rate"})
    assert type(scores).model_validate(legacy).upper_bound_format_errors is None


def test_without_upper_bound_its_format_errors_are_unknown_not_zero() -> None:
    scores = score_episodes([episode({0: [qa(0, 0, True)]})], [hand_item()])
    assert scores.upper_bound_format_errors is None and scores.upper_bound_format_error_rate is None


def no_memory_table(choices: dict[int, int | None], item_id: str = "h") -> NoMemoryTable:
    return NoMemoryTable(entries=[NoMemoryEntry(item_id=item_id, question_index=q, choice=c)
                                  for q, c in choices.items()])


def test_memory_gain_over_the_no_memory_baseline_by_hand() -> None:
    # The bare LLM always picks option 1 of Q0 and Q1. Gold Q0: 1, 2, 3 and Q1: 1, 2, 2 over p0..p2,
    # so it is right twice at p0 and never after: no-memory accuracy 2/6; agent accuracy .5 -> gain 1/6.
    ep = episode({0: [qa(0, 0, True), qa(0, 1, True)], 1: [qa(1, 0, False), qa(1, 1, False)],
                  2: [qa(2, 0, True), qa(2, 1, False)]})
    scores = score_episodes([ep], [hand_item()], no_memory=no_memory_table({0: 1, 1: 1}))
    assert scores.no_memory_accuracy == pytest.approx(1 / 3) and scores.memory_gain == pytest.approx(1 / 6)
    assert [p.memory_gain for p in scores.per_period] == [0.0, 0.0, 0.5]
    assert user_scores([ep], [hand_item()], no_memory=no_memory_table({0: 1, 1: 1}))[0].memory_gain == pytest.approx(
        1 / 6)
    # an unparsed no-memory reply (choice None) is simply wrong, never a guess
    unparsed = score_episodes([ep], [hand_item()], no_memory=no_memory_table({0: None, 1: 1}))
    assert unparsed.no_memory_accuracy == pytest.approx(1 / 6)
    assert score_episodes([ep], [hand_item()]).memory_gain is None


async def test_compute_no_memory_asks_each_question_once_as_the_baseline_role() -> None:
    llm = ScriptedLLM(lambda messages, role, wants_json: '{"answer": 1}' if messages[0]["content"][:3] != "Q2?"
                      else "no idea")
    table = await compute_no_memory(llm, [hand_item()], constrained=False)
    assert len(llm.calls) == 3 + 1  # one retry for Q2's unreadable reply
    assert {call["role"] for call in llm.calls} == {"baseline"} and not any(call["json"] for call in llm.calls)
    assert [e.choice for e in table.entries] == [1, 1, None] and table.entries[2].format_error
    assert table.correct(hand_item(), 0, 0) and not table.correct(hand_item(), 1, 0)
    constrained = await compute_no_memory(ScriptedLLM(lambda m, r, j: '{"answer": 2}'), [hand_item()])
    assert constrained.constrained and constrained.covers([hand_item()])


def test_memory_write_failures_are_summed_from_the_period_records() -> None:
    ep = episode({0: [qa(0, 0, True)], 1: [qa(1, 0, True)]})
    ep.periods[0].memory_writes = WriteCounters(requests=4, retries=2, failures=1)
    ep.periods[1].memory_writes = WriteCounters(requests=2, retries=0, failures=0)
    scores = score_episodes([ep], [hand_item()])
    assert (scores.write_requests, scores.write_failures) == (6, 1)
    assert scores.write_failure_rate == pytest.approx(1 / 6)
    assert [p.write_failures for p in scores.per_period] == [1, 0]
    assert score_episodes([episode({0: [qa(0, 0, True)]})], [hand_item()]).write_requests is None


def test_tracking_metrics_and_summary_line_name_both_memory_scores() -> None:
    from memevo.environments.score_text import extra_metrics, score_lines

    ep = episode({0: [qa(0, 0, True), qa(0, 1, True)], 1: [qa(1, 0, False), qa(1, 1, False)],
                  2: [qa(2, 0, True), qa(2, 1, False)]})
    scores = score_episodes([ep], [hand_item()], table(), no_memory=no_memory_table({0: 1, 1: 1}))
    metrics = extra_metrics(scores)
    assert metrics == {"memory_cells_used": 3.0, "memory_cells_excluded": 0.0,
                       "no_memory_accuracy": pytest.approx(1 / 3), "memory_gain": pytest.approx(1 / 6)}
    lines = score_lines(scores)
    assert lines[0] == "accuracy 0.500 (random 0.375, upper bound 0.500, no-memory accuracy 0.333, memory gain +0.167)"
    assert lines[1].startswith("memory score n/a (upper bound 0.500 not above random 0.375 over 6 questions")
    assert all(len(line) <= 100 for line in lines)
    assert extra_metrics(score_episodes([ep], [hand_item()])) == {}
