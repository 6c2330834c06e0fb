"""AWI: write, update, delete, note order (own and compat), malformed replies, brace-heavy prompts, answer purity,
state round trip."""

import json

import pytest

from memevo.agents.prompts.awi import WRITE_FORMAT_CLAUSE
from memevo.core.errors import UserInputError
from tests.agents.test_agents_support import day, json_calls, make, reloaded, scripted


async def run_rounds(agent, n: int, first_day: int = 1) -> None:
    for i in range(n):
        await agent.respond(f"message {i}", day(first_day + i))


async def test_write_update_delete_with_simulated_timestamps():
    replies = [
        '{"city": "lives in Oslo", "pet": "has a cat"}',
        '{"city": "moved to Bergen"}',
        '{"pet": null, "diet": ""}',
    ]
    agent = make("awi", scripted(replies), update_every=2, short_term=0)
    await run_rounds(agent, 1, first_day=1)
    assert [(n.label, n.value, n.timestamp) for n in agent.notes] == [
        ("city", "lives in Oslo", day(1)),
        ("pet", "has a cat", day(1)),
    ]
    await run_rounds(agent, 1, first_day=5)
    # The updated label gets the new (simulated) time and moves after the older note.
    assert await agent.memory_text("") == "- pet: has a cat\n- city: moved to Bergen"
    assert agent.notes[-1].timestamp == day(5)
    await run_rounds(agent, 1, first_day=9)
    assert await agent.memory_text("") == "- city: moved to Bergen"


async def test_compat_changes_a_label_in_place_and_shows_notes_in_write_order():
    """AMemGym kept a changed label where it was (so the write prompt lists notes unmoved) and showed notes by
    the time they were last written."""
    llm = scripted(['{"city": "Oslo", "pet": "cat"}', '{"diet": "vegan"}', '{"city": "Bergen"}', "{}"])
    agent = make("awi", llm, update_every=2, short_term=0, amemgym_compat=True)
    await run_rounds(agent, 3)
    assert [(n.label, n.value, n.written) for n in agent.notes] == [
        ("city", "Bergen", 3),
        ("pet", "cat", 1),
        ("diet", "vegan", 2),
    ]
    assert await agent.memory_text("") == "- pet: cat\n- diet: vegan\n- city: Bergen"
    await run_rounds(agent, 1, first_day=4)
    assert '{\n  "city": "Bergen",\n  "pet": "cat",\n  "diet": "vegan"\n}' in json_calls(llm)[-1]
    assert await reloaded(agent, scripted()).memory_text("") == await agent.memory_text("")


@pytest.mark.parametrize(("compat", "shown"), [(False, "- second: b\n- first: a"), (True, "- first: a\n- second: b")])
async def test_notes_are_shown_by_simulated_time_or_under_compat_by_write(compat, shown):
    """Replayed or resumed input can arrive out of simulated-time order: memevo shows notes by the time they
    speak of, AMemGym (compat) by when they were written."""
    agent = make(
        "awi", scripted(['{"first": "a"}', '{"second": "b"}']), update_every=2, short_term=0, amemgym_compat=compat
    )
    await run_rounds(agent, 1, first_day=9)
    await run_rounds(agent, 1, first_day=1)
    assert [n.label for n in agent.notes] == ["first", "second"]
    assert await agent.memory_text("") == shown


async def test_compat_still_deletes_on_empty_or_null():
    """A documented difference kept under compat: AMemGym stored null and "" as values."""
    agent = make(
        "awi",
        scripted(['{"a": "x", "b": "y"}', '{"a": null, "b": ""}']),
        update_every=2,
        short_term=0,
        amemgym_compat=True,
    )
    await run_rounds(agent, 2)
    assert agent.notes == []


async def test_write_prompt_carries_current_notes_and_simulated_date():
    llm = scripted(['{"job": "nurse"}', "{}"])
    agent = make("awi", llm, update_every=2, short_term=0)
    await run_rounds(agent, 2)
    second = json_calls(llm)[1]
    assert '{"job": "nurse"}' in second and "Today is 2021-03-03." in second
    assert second.rstrip().endswith(WRITE_FORMAT_CLAUSE)


async def test_malformed_reply_is_retried_once_then_skipped_and_counted():
    llm = scripted(["not json at all ]]", '["a", "list"]', '{"ok": "recovered"}', '{"x": {"nested": 1}}', "[1]"])
    agent = make("awi", llm, update_every=2, short_term=0)
    await run_rounds(agent, 1)  # bad text, then a list: both attempts fail
    assert agent.notes == [] and agent.counters.failures == 1
    await run_rounds(agent, 1, first_day=2)  # valid at once
    await run_rounds(agent, 1, first_day=3)  # a nested object, then a list: both rejected
    assert agent.counters.model_dump() == {"requests": 3, "retries": 2, "failures": 2}
    assert [n.label for n in agent.notes] == ["ok"]


@pytest.mark.parametrize(
    ("bad", "named"),
    [
        ("not json at all ]]", "it was not valid JSON"),
        ('["a", "list"]', "expected a JSON object mapping labels to strings, got a list"),
        ('{"x": {"nested": 1}}', "the value of 'x' is a dict, not a string"),
    ],
)
async def test_retry_shows_the_bad_reply_and_names_what_was_wrong(bad, named):
    llm = scripted([bad, '{"ok": "fixed"}'])
    agent = make("awi", llm, update_every=2, short_term=0)
    await run_rounds(agent, 1)
    first, retry = [call["messages"] for call in llm.calls if call["json"]]
    # A different request (a resend at temperature 0 would mostly get the same reply back).
    assert retry[0] == first[0] and len(first) == 1
    assert retry[1] == {"role": "assistant", "content": bad}
    assert retry[2]["role"] == "user" and f"could not be used: {named}." in retry[2]["content"]
    assert agent.counters.model_dump() == {"requests": 1, "retries": 1, "failures": 0}
    assert agent.notes[0].value == "fixed"


@pytest.mark.parametrize("write_max_tokens", [None, 24])
async def test_note_writes_and_their_retry_ask_at_the_write_cap_replies_at_the_llm_cap(write_max_tokens):
    """A write's JSON and a chat reply need different lengths: ``write_max_tokens`` caps the write and its retry;
    the reply asks for no cap of its own (the LLM config's); unset, the write takes the LLM config's cap too."""
    llm = scripted(["not json at all ]]", '{"ok": "fixed"}'])
    agent = make("awi", llm, update_every=2, short_term=0, write_max_tokens=write_max_tokens)
    await run_rounds(agent, 1)
    assert [(call["json"], call["max_tokens"]) for call in llm.calls] == [
        (False, None), (True, write_max_tokens), (True, write_max_tokens)
    ]
    assert agent.notes[0].value == "fixed"


async def test_prompt_full_of_braces_and_json_examples_works():
    weird = (
        'Example output: {"diet": "vegan", "meta": {"since": "2020"}}. Empty: {}. Stray: { and } and {{ }}.\n'
        "Types: {memory_types}\nNotes: {current_memories}\nChat: {conversation}\n" + WRITE_FORMAT_CLAUSE
    )
    types = 'Record diets like {"diet": "..."}; ignore { weather }.'
    llm = scripted(['{"diet": "vegan"}'])
    agent = make("awi", llm, update_every=2, short_term=0, prompts={"write_prompt": weird, "memory_types": types})
    await agent.respond('My JSON is {"a": 1} and I am {vegan}', day(1))
    sent = json_calls(llm)[0]
    assert 'Example output: {"diet": "vegan", "meta": {"since": "2020"}}. Empty: {}. Stray: { and } and {{ }}.' in sent
    assert 'Types: Record diets like {"diet": "..."}; ignore { weather }.' in sent
    assert json.dumps('My JSON is {"a": 1} and I am {vegan}') in sent
    assert agent.notes[0].value == "vegan"


def test_a_placeholder_the_agent_does_not_fill_is_refused():
    """``{slot}`` would reach the LLM as literal text: a typo of a real placeholder, so it is bad input."""
    prompt = "Notes: {current_memories}\nChat: {conversation}\nUnknown {slot}.\n" + WRITE_FORMAT_CLAUSE
    with pytest.raises(UserInputError, match=r"unknown placeholder\(s\) \{slot\}") as error:
        make("awi", scripted([]), prompts={"write_prompt": prompt})
    assert error.value.field == "prompts.write_prompt"


async def test_answer_changes_no_state_and_returns_consulted_memory():
    llm = scripted(['{"city": "Oslo"}'], chat="You live in Oslo.")
    agent = make("awi", llm, update_every=2, short_term=2)
    await run_rounds(agent, 2)
    before = json.dumps(agent.state(), sort_keys=True)
    answer = await agent.answer("Q: where do I live? (1) Oslo (2) Rome", query="where do I live?", now=day(9))
    assert answer.text == "You live in Oslo." and answer.consulted_memory == "- city: Oslo"
    assert json.dumps(agent.state(), sort_keys=True) == before
    system = llm.calls[-1]["messages"][0]
    assert system["role"] == "system" and "- city: Oslo" in system["content"]


def note_from_conversation(prompt: str) -> str:
    """Deterministic write replies: note the latest user message under a label derived from it."""
    conversation = json.loads(prompt.split("Latest conversation (JSON list of messages):\n", 1)[1].split("\n", 1)[0])
    text = conversation[0]["content"]
    return json.dumps({f"topic{len(text) % 3}": text})


async def test_state_round_trip_gives_identical_behaviour():
    agent = make("awi", scripted(note_from_conversation), update_every=2, short_term=2)
    await run_rounds(agent, 5)
    twin = reloaded(agent, scripted(note_from_conversation))
    assert twin.state() == agent.state()
    agent.llm = scripted(note_from_conversation)
    for each in (agent, twin):
        await each.respond("a longer follow-up message", day(20))
        await each.end_session(day(20))
        await each.respond("x", day(21))
    assert agent.state() == twin.state()
    assert [c["messages"] for c in agent.llm.calls] == [c["messages"] for c in twin.llm.calls]
    assert len(agent.notes) >= 2
