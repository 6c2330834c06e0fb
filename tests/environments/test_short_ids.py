"""User ids in terminal lines: 8 characters, more only where two of the run's users would read alike."""

from __future__ import annotations

from memevo.environments.short_ids import short_ids, short_user_id

UUIDS = ["3f2a9b1c-0000-4000-8000-000000000001", "3f2a9b1c-7777-4000-8000-000000000002",
         "9d8e7f60-0000-4000-8000-000000000003"]


def test_a_uuid_is_cut_to_8_characters_unless_another_shares_them() -> None:
    short = short_ids(UUIDS)
    assert short[UUIDS[2]] == "9d8e7f60"
    assert (short[UUIDS[0]], short[UUIDS[1]]) == ("3f2a9b1c-0", "3f2a9b1c-7")  # the first 8 are shared
    assert len(set(short.values())) == len(UUIDS)


def test_short_ids_stay_whole_and_an_id_that_begins_another_stays_distinct() -> None:
    short = short_ids(["user-1", "user-10", "abcdefgh", "abcdefghij"])
    assert short == {"user-1": "user-1", "user-10": "user-10", "abcdefgh": "abcdefgh", "abcdefghij": "abcdefghi"}


def test_one_id_is_shortened_as_among_the_run_users() -> None:
    assert short_user_id(UUIDS[0], UUIDS) == "3f2a9b1c-0"
    assert short_user_id(UUIDS[2], UUIDS) == "9d8e7f60"
    assert short_user_id("not-in-the-run-0000", UUIDS) == "not-in-t"
