"""LoCoMo scored as its authors score it: recorded replies (tests/fixtures/locomo_recorded.json, a synthetic file in
locomo10.json's format) against the per-question values LoCoMo's ``task_eval/evaluation.py`` gave them, in both ways
of asking; its adversarial rule on unreadable choices; and the free-text mode its baseline asks in."""

from __future__ import annotations

import json
import re
from pathlib import Path
from statistics import fmean
from typing import Any

import pytest
from typer.testing import CliRunner

from memevo.agents.llm.accounting import Accounting
from memevo.agents.llm.config import LLMConfig
from memevo.agents.llm.gateway import LLMGateway
from memevo.agents.prompts.dates import spoken_date
from memevo.core.errors import UserInputError
from memevo.environments.benchmarks.locomo import NOT_MENTIONED, LoCoMoEnvironment
from memevo.environments.cli import app
from memevo.environments.metrics import score_episodes
from memevo.environments.runner import EpisodeConfig
from tests.agents.test_agents_support import make, scripted
from tests.doubles.fault_server import FaultServer
from tests.doubles.replay_agents import ReplayScoringAgent

FIXTURE = json.loads((Path(__file__).parents[1] / "fixtures" / "locomo_recorded.json").read_text(encoding="utf-8"))
RECORDED: list[dict[str, Any]] = FIXTURE["recorded"]
runner = CliRunner()


def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps(FIXTURE["samples"]), encoding="utf-8")
    return path


@pytest.mark.parametrize("asking", ["memevo", "authors"])
async def test_recorded_replies_score_as_locomos_scorer(tmp_path: Path, asking: str) -> None:
    environment = LoCoMoEnvironment(EpisodeConfig(), asking=asking)
    if environment.stem is None:
        pytest.skip("LoCoMo's F1 stems with nltk's Porter stemmer")
    (item,) = environment.load_items(data_file(tmp_path))
    views = environment.questions(item, 0)
    scores = []
    for entry in RECORDED:
        view = views[entry["index"]]
        scored = (await environment.score_unread_choice(item, view, entry["reply"]) if view.choices is not None
                  else await environment.score_answer(item, 0, view, entry["reply"]))
        scores.append(scored.score)
    assert scores == pytest.approx([entry["expected"] for entry in RECORDED], abs=1e-12)


def test_locomos_rounding_moves_a_mean_by_less_than_half_a_thousandth() -> None:
    """LoCoMo rounds each question's F1 to 3 decimals before averaging; memevo keeps the exact values."""
    exact = [entry["expected"] for entry in RECORDED]
    rounded = [round(value, 3) for value in exact]
    assert fmean(rounded) != fmean(exact) and abs(fmean(rounded) - fmean(exact)) < 0.0005


async def test_a_chosen_option_is_credited_by_its_text(tmp_path: Path) -> None:
    environment = LoCoMoEnvironment(EpisodeConfig())
    (item,) = environment.load_items(data_file(tmp_path))
    view = environment.questions(item, 0)[7]
    assert view.choices is not None and view.gold_choice is not None
    right = await environment.score_answer(item, 0, view, f'{{"answer": {view.gold_choice}}}')
    wrong = await environment.score_answer(item, 0, view, f'{{"answer": {3 - view.gold_choice}}}')
    assert (right.score, right.method, wrong.score) == (1.0, "choice", 0.0)


async def test_an_unreadable_choice_saying_no_information_is_credited_in_a_run(tmp_path: Path) -> None:
    """The issue's conv-26#155: reply "No information available" to a two-option question; LoCoMo credits it."""
    environment = LoCoMoEnvironment(EpisodeConfig(answer_mode="generated"))
    (item,) = environment.load_items(data_file(tmp_path))
    agent = ReplayScoringAgent(lambda prompt, memory: "No information available" if "Options" in prompt else "x",
                               lambda option, memory, prompt: 0.0)
    records = (await environment.run_item(agent, item, None)).periods[0].qa
    adversarial = [record for record in records if record.category == "adversarial"]
    assert len(adversarial) == 4
    assert all(record.format_error and record.choice is None and record.correct for record in adversarial)


async def test_authors_mode_asks_free_text_with_lettered_options(tmp_path: Path) -> None:
    environment = LoCoMoEnvironment(EpisodeConfig(), asking="authors")
    (item,) = environment.load_items(data_file(tmp_path))
    views = environment.questions(item, 0)
    assert all(view.choices is None for view in views)
    options = item.questions[7].reference["options"]
    assert sorted(options.values()) == sorted([NOT_MENTIONED, "Mochi"])
    assert f"(a) {options['a']} (b) {options['b']}" in environment.answer_prompt(views[7])
    assert "approximate date" in environment.answer_prompt(views[4])
    assert "approximate date" not in environment.answer_prompt(views[0])
    not_mentioned = "a" if options["a"] == NOT_MENTIONED else "b"
    for reply, expected in [(not_mentioned, 1.0), (f"({not_mentioned})", 1.0), ("Mochi", 0.0)]:
        assert (await environment.score_answer(item, 0, views[7], reply)).score == expected


async def test_authors_mode_run_has_per_category_scores(tmp_path: Path) -> None:
    environment = LoCoMoEnvironment(EpisodeConfig(), asking="authors")
    items = environment.load_items(data_file(tmp_path))
    agent = ReplayScoringAgent(lambda prompt, memory: "Not mentioned", lambda option, memory, prompt: 0.0)
    episode = await environment.run_item(agent, items[0], None)
    assert not agent.scored and all(record.scoring != "choice" for record in episode.periods[0].qa)
    per_category = {c.category: c.accuracy for c in score_episodes([episode], items).per_category}
    assert per_category["adversarial"] == 1.0 and per_category["single-hop"] == 0.0


def test_an_unknown_way_of_asking_names_the_option() -> None:
    with pytest.raises(UserInputError, match="asking") as caught:
        LoCoMoEnvironment(EpisodeConfig(), asking="baseline")
    assert caught.value.field == "--env-option asking"


@pytest.mark.parametrize("kind", ["native", "rag"])
async def test_every_session_date_reaches_the_agents_question_request(tmp_path: Path, kind: str) -> None:
    environment = LoCoMoEnvironment(EpisodeConfig(), asking="authors")
    (item,) = environment.load_items(data_file(tmp_path))
    llm = scripted(chat="ok")
    agent = make(kind, llm, **({} if kind == "native" else {"top_k": 10, "update_every": 1, "short_term": 0}))
    await environment.run_item(agent, item, None)
    request = "\n".join(message["content"] for message in llm.calls[-1]["messages"])
    for session in item.sessions:
        assert spoken_date(session.time) in request
    assert "12 March 2023, 16:05" in request


def locomo_file(tmp_path: Path, samples: list[dict[str, Any]]) -> Path:
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps(samples), encoding="utf-8")
    return path


def bad_files() -> dict[str, tuple[list[dict[str, Any]], str, str]]:
    """name -> (samples, the field refused, words of the message)."""
    base = FIXTURE["samples"][0]
    return {
        "duplicate": ([base, base], "[1].sample_id", "same id as item [0]"),
        "dots": ([base | {"sample_id": ".."}], "[0].sample_id", "run folder itself or its parent"),
        "long": ([base | {"sample_id": "c" * 300}], "[0].sample_id", "300 characters long"),
        "no questions": ([base | {"qa": []}], "", "none of the 1 items has a question"),
    }


@pytest.mark.parametrize("case", list(bad_files()))
def test_validate_stats_and_eval_refuse_alike_naming_file_item_and_field(tmp_path: Path, case: str) -> None:
    samples, field, words = bad_files()[case]
    path = locomo_file(tmp_path, samples)
    validate = runner.invoke(app, ["validate", "-e", "locomo", str(path)])
    assert validate.exit_code == 2 and words in validate.output and str(path) in validate.output
    assert (f"field '{field}'" in validate.output) == bool(field)
    stats = runner.invoke(app, ["stats", "-e", "locomo", str(path)])
    assert isinstance(stats.exception, UserInputError) and words in str(stats.exception)
    environment = LoCoMoEnvironment(EpisodeConfig())
    with pytest.raises(UserInputError, match=re.escape(words)) as caught:
        environment.prepared(environment.load_items(path), source=str(path))
    assert caught.value.source == str(path) and caught.value.field == (field or None)


@pytest.mark.parametrize("command", ["stats", "validate"])
def test_a_locomo_file_read_as_amemgym_names_the_environment_flag(tmp_path: Path, command: str) -> None:
    path = locomo_file(tmp_path, FIXTURE["samples"])
    result = runner.invoke(app, [command, str(path)])
    assert isinstance(result.exception, UserInputError)
    assert result.exception.field == "--environment" and "add --environment locomo" in str(result.exception)
    assert str(result.exception).startswith(str(path))


async def test_likelihood_answers_on_a_remote_endpoint_are_refused_before_any_request(tmp_path: Path) -> None:
    environment = LoCoMoEnvironment(EpisodeConfig(answer_mode="likelihood"))
    (item,) = environment.load_items(data_file(tmp_path))
    with FaultServer(lambda body: "ok") as server:
        gateway = LLMGateway(LLMConfig(model="remote"), base_url=server.url, cache=None, accounting=Accounting())
        with pytest.raises(UserInputError, match="likelihood") as caught:
            await environment.run_item(make("native", gateway), item, None)
        assert server.requests == [] and caught.value.field == "episode.answer_mode"


async def test_figures_are_named_score_f1_in_the_summary_and_the_report(tmp_path: Path) -> None:
    from memevo.environments.score_text import score_lines
    from memevo.evolve.presentation.report import score_header

    environment = LoCoMoEnvironment(EpisodeConfig(), asking="authors")
    items = environment.load_items(data_file(tmp_path))
    agent = ReplayScoringAgent(lambda prompt, memory: "cello", lambda option, memory, prompt: 0.0)
    scores = score_episodes([await environment.run_item(agent, items[0], None)], items)
    lines = score_lines(scores, width=1000)
    assert lines[0].startswith("score (F1, substring) ") and "accuracy" not in lines[0]
    assert any(line.startswith("per category (score (F1, substring)): single-hop ") for line in lines)
    assert score_header(scores, amemgym=False)[0].split(" | ")[2] == "score (F1, substring)"
