"""LoCoMo as an environment: a small file in locomo10.json's format, replayed and scored as LoCoMo scores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memevo.core.errors import UserInputError
from memevo.environments.benchmarks.locomo import NOT_MENTIONED, UNSTEMMED, LoCoMoEnvironment
from memevo.environments.cli import app
from memevo.environments.metrics import score_episodes
from memevo.environments.qa import answer_schema
from memevo.environments.replay import CLOZE_INSTRUCTION, SHORT_ANSWER_REQUEST
from memevo.environments.runner import EpisodeConfig
from memevo.environments.score_text import score_lines
from tests.doubles.replay_agents import ReplayRecordingAgent, ReplayScoringAgent

runner = CliRunner()
ENV = LoCoMoEnvironment(EpisodeConfig())


def sample() -> dict[str, Any]:
    return {
        "sample_id": "conv-1",
        "conversation": {
            "speaker_a": "Ana", "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a dog called Rex."},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "Lovely! Look at this.", "blip_caption": "a red kite",
                 "img_url": ["http://example.invalid/kite.jpg"], "query": "kite"},
                {"speaker": "Ana", "dia_id": "D1:3", "text": "I also paint sunsets and mountains."},
            ],
            "session_2_date_time": "10:00 am on 9 June, 2023",
            "session_2": [{"speaker": "Ben", "dia_id": "D2:1", "text": "I moved to Lisbon."},
                          {"speaker": "Ana", "dia_id": "D2:2", "text": "Great news."}],
            "session_3_date_time": "9:00 am on 1 July, 2023",  # a date without its session, as in locomo10
        },
        "qa": [
            {"question": "What is Ana's dog called?", "answer": "Rex", "evidence": ["D1:1"], "category": 4},
            {"question": "What does Ana paint?", "answer": "sunsets, mountains", "evidence": ["D1:3"], "category": 1},
            {"question": "When did Ben move?", "answer": 2023, "evidence": ["D2:1"], "category": 2},
            {"question": "What might Ben enjoy?", "answer": "kites; flying", "evidence": ["D1:2"], "category": 3},
            {"question": "What is Ben's cat called?", "adversarial_answer": "Rex", "evidence": ["D1:1"],
             "category": 5},
        ],
        "event_summary": {}, "observation": {}, "session_summary": {},
    }


def write(tmp_path: Path, samples: list[dict[str, Any]]) -> Path:
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps(samples, indent=2), encoding="utf-8")
    return path


def test_sessions_replay_in_order_with_speakers_and_shared_images(tmp_path: Path) -> None:
    (item,) = ENV.load_items(write(tmp_path, [sample()]))
    assert [s.id for s in item.sessions] == ["session_1", "session_2"]
    first = item.sessions[0].exchanges()
    assert first[0] == ("Ana: I adopted a dog called Rex.", "Ben: Lovely! Look at this. [shares a red kite]")
    assert first[1] == ("Ana: I also paint sunsets and mountains.", "")
    assert item.sessions[1].exchanges() == [("", "Ben: I moved to Lisbon."), ("Ana: Great news.", "")]
    assert item.sessions[1].time.month == 6


def test_adversarial_questions_are_locomos_two_options_and_feedback_hides_gold(tmp_path: Path) -> None:
    (item,) = ENV.load_items(write(tmp_path, [sample()]))
    views = ENV.questions(item, 0)
    adversarial = views[4]
    assert adversarial.category == "adversarial" and sorted(adversarial.choices or []) == sorted([NOT_MENTIONED, "Rex"])
    assert adversarial.gold == NOT_MENTIONED and item.questions[4].scoring == "choice"
    assert [view.category for view in views[:4]] == ["single-hop", "multi-hop", "temporal", "open-domain"]
    assert "approximate date" in ENV.answer_prompt(views[2]) and "approximate date" not in ENV.answer_prompt(views[0])


@pytest.mark.parametrize(("index", "reply", "expected"), [
    (0, "Rex", 1.0),
    (0, "The dog is called Rex", 2 * (1 / 4) * 1 / (1 / 4 + 1)),
    (1, "mountains", 0.5),  # multi-hop: mean over gold parts of the best part match
    (1, "sunsets and mountains", 2 / 3),  # one reply part ("and" dropped) against each gold part
    (3, "kites", 1.0),  # open-domain: scored against the gold text before ';'
])
async def test_free_text_scores_follow_locomo(tmp_path: Path, index: int, reply: str, expected: float) -> None:
    (item,) = ENV.load_items(write(tmp_path, [sample()]))
    score = await ENV.score_answer(item, 0, ENV.questions(item, 0)[index], reply)
    assert score.score == pytest.approx(expected) and score.method == "token_f1"
    assert score.detail == (None if ENV.stem is not None else UNSTEMMED)


async def test_choosing_not_mentioned_is_the_credit_of_an_adversarial_question(tmp_path: Path) -> None:
    (item,) = ENV.load_items(write(tmp_path, [sample()]))
    view = ENV.questions(item, 0)[4]
    assert view.choices is not None and view.gold_choice is not None
    right = await ENV.score_answer(item, 0, view, f'{{"answer": {view.gold_choice}}}')
    wrong = await ENV.score_answer(item, 0, view, f'{{"answer": {3 - view.gold_choice}}}')
    assert (right.score, wrong.score) == (1.0, 0.0)


async def test_run_item_replays_then_scores_per_category(tmp_path: Path) -> None:
    items = ENV.load_items(write(tmp_path, [sample()]))
    agent = ReplayRecordingAgent(lambda prompt, memory: "Rex" if "dog" in prompt and "Rex" in memory
                                 else '{"answer": 1}' if "Options" in prompt else "no idea")
    episode = await ENV.run_item(agent, items[0], None)
    assert len(agent.ingested) == 4 and len(agent.session_ends) == 2
    assert all(now == items[0].sessions[1].time for _, _, now in agent.asked)
    records = {record.question_index: record for record in episode.periods[0].qa}
    assert records[0].value == 1.0 and records[0].category == "single-hop" and records[0].gold_answer == "Rex"
    assert records[2].value == 0.0
    scores = score_episodes([episode], items)
    per_category = {c.category: c.accuracy for c in scores.per_category}
    assert per_category["single-hop"] == 1.0 and per_category["multi-hop"] == 0.0
    assert scores.random_baseline is None


def test_bad_turn_names_file_and_field(tmp_path: Path) -> None:
    broken = sample()
    del broken["conversation"]["session_2"][1]["text"]
    path = write(tmp_path, [sample(), broken])
    with pytest.raises(UserInputError) as caught:
        ENV.load_items(path)
    assert caught.value.source == str(path)
    assert caught.value.field == "[1].conversation.session_2[1].text"


def test_adversarial_question_without_its_answer_is_an_error(tmp_path: Path) -> None:
    broken = sample()
    del broken["qa"][4]["adversarial_answer"]
    with pytest.raises(UserInputError, match="adversarial_answer") as caught:
        ENV.load_items(write(tmp_path, [broken]))
    assert caught.value.field == "[0].qa[4]"


def test_a_limit_reads_only_the_first_samples(tmp_path: Path) -> None:
    second = sample() | {"sample_id": "conv-2"}
    assert [item.id for item in ENV.load_items(write(tmp_path, [sample(), second]), limit=1)] == ["conv-1"]


def test_env_stats_and_validate_read_locomo(tmp_path: Path) -> None:
    path = write(tmp_path, [sample()])
    stats = runner.invoke(app, ["stats", "--environment", "locomo", "--json", str(path)])
    assert stats.exit_code == 0, stats.output
    figures = json.loads(stats.output)
    assert figures["sessions"] == 2 and figures["exchanges"] == 4 and figures["questions"] == 5
    assert figures["questions_per_category"]["adversarial"] == 1
    assert figures["questions_per_scoring"] == {"token_f1": 4, "choice": 1}
    valid = runner.invoke(app, ["validate", "-e", "locomo", str(path)])
    assert valid.exit_code == 0 and "1 locomo items, 5 questions: 0 errors" in valid.output


def test_env_validate_of_a_broken_file_fails_with_the_field(tmp_path: Path) -> None:
    broken = sample()
    broken["conversation"]["session_1_date_time"] = "yesterday"
    path = write(tmp_path, [broken])
    result = runner.invoke(app, ["validate", "-e", "locomo", str(path)])
    assert isinstance(result.exception, UserInputError)
    assert str(result.exception).startswith(f"{path}, field '[0].conversation.session_1_date_time'")


def test_validate_warns_of_evidence_that_names_no_turn(tmp_path: Path) -> None:
    odd = sample()
    odd["qa"][0]["evidence"] = ["D1:1 D1:3"]  # two ids in one string, as a few locomo10 questions have
    result = runner.invoke(app, ["validate", "-e", "locomo", str(write(tmp_path, [odd]))])
    assert result.exit_code == 0
    assert "warning: conv-1 question 0: evidence 'D1:1 D1:3' names no turn" in result.output
    assert "0 errors, 1 warnings" in result.output


async def test_an_adversarial_question_on_a_likelihood_model_scores_its_options_unlisted(tmp_path: Path) -> None:
    environment = LoCoMoEnvironment(EpisodeConfig(answer_mode="likelihood"))
    (item,) = environment.load_items(write(tmp_path, [sample()]))
    agent = ReplayScoringAgent(lambda prompt, memory: "Rex",  # the question makes "not mentioned" likelier
                               lambda option, memory, prompt: -1.0 if (option == NOT_MENTIONED) == ("cat" in prompt)
                               else -40.0)
    episode = await environment.run_item(agent, item, None)
    adversarial = episode.periods[0].qa[4]
    assert adversarial.answer_mode == "calibrated_likelihood" and not adversarial.format_error and adversarial.correct
    choices = environment.questions(item, 0)[4].choices
    assert agent.scored == [(adversarial.prompt, choices), (CLOZE_INSTRUCTION, choices)]  # then the question left out
    prompt = agent.scored[0][0]
    assert prompt == adversarial.prompt and "Options" not in prompt and NOT_MENTIONED not in prompt
    assert "Rex" not in prompt  # the adversarial answer is an option: it never reaches the prompt
    assert all(not record.format_error for record in episode.periods[0].qa)


async def test_generated_choice_answers_are_constrained_and_free_text_asks_a_short_phrase(tmp_path: Path) -> None:
    environment = LoCoMoEnvironment(EpisodeConfig(answer_mode="generated"))
    (item,) = environment.load_items(write(tmp_path, [sample()]))
    agent = ReplayScoringAgent(lambda prompt, memory: '{"answer": 2}' if "Options" in prompt else "Rex",
                               lambda option, memory, prompt: 0.0)
    records = (await environment.run_item(agent, item, None)).periods[0].qa
    schemas = dict(zip([prompt for prompt, _, _ in agent.asked], agent.schemas, strict=True))
    assert schemas[records[4].prompt] == answer_schema(2) and records[4].answer_mode == "generated"
    assert records[4].choice == 2 and not agent.scored
    free = records[:4]
    assert all(schemas[record.prompt] is None for record in free)
    assert all(record.prompt.startswith(SHORT_ANSWER_REQUEST) for record in free)
    assert free[0].prompt.endswith("What is Ana's dog called?")
    assert "approximate date" in free[2].prompt


async def test_free_text_scores_are_labelled_mean_credit_and_answers_said_truthfully(tmp_path: Path) -> None:
    items = ENV.load_items(write(tmp_path, [sample()]))
    agent = ReplayRecordingAgent(lambda prompt, memory: '{"answer": 1}' if "Options" in prompt else "Rex")
    scores = score_episodes([await ENV.run_item(agent, items[0], None)], items)
    lines = score_lines(scores, width=1000)
    assert lines[0].startswith(f"score (F1) {scores.accuracy:.3f} (mean per-question credit: token F1 on 4, choice on "
                               "1;")
    assert any(line.startswith("per category (score (F1)): single-hop ") for line in lines)
    assert scores.scoring == {"token_f1": 4, "choice": 1}
    answers = next(line for line in lines if line.startswith("answers:"))
    assert answers.startswith("answers: free text, scored by token F1 (4 q); multiple-choice questions (1 q) "
                              "answered by generated")
    free_only = score_episodes([await ENV.run_item(agent, items[0].model_copy(
        update={"questions": items[0].questions[:4]}), None)], items)
    assert free_only.answer_mode is None
    text = " ".join(score_lines(free_only, width=1000))
    assert "answers: free text, scored by token F1 (4 q)" in text and "option" not in text


@pytest.mark.parametrize(("reply", "expected"), [
    ("Ana: Rex", 1.0),  # the transcript's "Name:" form copied into the reply is not part of the answer
    ("Ben: Rex", 1.0),
    ("Ben: Rex\nAna: Yes, a lovely dog!", 1.0),  # the transcript goes on after the answer
    ("Rex\n  Ben: Nice.", 1.0),
    ("Rex, Ana: he is a beagle", 2 / 6),  # a name inside the line is part of the answer
    ("Rex", 1.0),
    ("Note: Rex", 2 / 3),  # only a speaker's name is dropped
    ("Ana Rex", 2 / 3),
])
async def test_a_leading_speaker_name_is_dropped_before_scoring(tmp_path: Path, reply: str, expected: float) -> None:
    (item,) = ENV.load_items(write(tmp_path, [sample()]))
    score = await ENV.score_answer(item, 0, ENV.questions(item, 0)[0], reply)
    assert score.score == pytest.approx(expected)


async def test_a_speaker_prefix_costs_a_multi_hop_answer_nothing(tmp_path: Path) -> None:
    (item,) = ENV.load_items(write(tmp_path, [sample()]))
    view = ENV.questions(item, 0)[1]
    prefixed = await ENV.score_answer(item, 0, view, "Ana: sunsets, mountains")
    assert prefixed.score == 1.0


def question_or_prior(option: str, memory: str, prompt: str) -> float:
    """A model that prefers "not mentioned" by a wide margin whatever it is asked, and gains 5 nats for "Rex" when
    asked the question."""
    prior = -1.0 if option == NOT_MENTIONED else -40.0
    return prior + (5.0 if option == "Rex" and "cat" in prompt else 0.0)


async def test_calibrated_likelihood_follows_the_question_not_the_options_prior(tmp_path: Path) -> None:
    per_byte = LoCoMoEnvironment(EpisodeConfig(answer_mode="likelihood"))
    per_byte.calibration_prompt = None  # type: ignore[misc]
    calibrated = LoCoMoEnvironment(EpisodeConfig(answer_mode="likelihood"))
    (item,) = calibrated.load_items(write(tmp_path, [sample()]))
    view = calibrated.questions(item, 0)[4]
    assert view.choices is not None
    chosen, replies = {}, {}
    for name, environment in (("per_byte", per_byte), ("calibrated", calibrated)):
        agent = ReplayScoringAgent(lambda prompt, memory: "Rex", question_or_prior)
        record = (await environment.run_item(agent, item, None)).periods[0].qa[4]
        chosen[name], replies[name] = view.choices[(record.choice or 0) - 1], json.loads(record.raw_reply or "")
    assert chosen == {"per_byte": NOT_MENTIONED, "calibrated": "Rex"}
    pmi = replies["calibrated"]["pointwise_mutual_information"]
    assert pmi == [5.0 if option == "Rex" else 0.0 for option in view.choices]
    assert "logprob_per_byte" in replies["per_byte"]
