"""The Python API: the example with its own agent class and dataset runs against the fake endpoint and returns typed
results that point at real files and MLflow runs; objects and files give the same run; bad input names its field."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from experiments import api_example
from memevo.agents import registry
from memevo.agents.policy import MemoryPolicy
from memevo.core.errors import Interrupted, UserInputError
from memevo.environments.amemgym.data.io import save_items
from memevo.evolve.api import evaluate, optimize
from memevo.evolve.cli.main import app
from tests.doubles.fault_server import FaultServer
from tests.doubles.registries import isolate

FIELD = re.compile(r"\[\[ ## (\w+) ## \]\]\n(.*?)(?=\n\n\[\[ ## |\Z)", re.DOTALL)
ADDED_RULE = "When two notes disagree, trust the newer one."


def reply(body: dict[str, Any]) -> str:
    """An endpoint that answers each question with its first option, proposes the current prompt plus one rule
    (DSPy's chat format), and otherwise says it noted the message."""
    messages = body["messages"]
    if any("[[ ## " in message["content"] for message in messages):
        fields = dict(FIELD.findall(messages[-1]["content"]))
        new_text = f"{fields.get('current_text', '').strip()}\n{ADDED_RULE}"
        return f"[[ ## new_text ## ]]\n{new_text}\n\n[[ ## changes ## ]]\n[\"added a rule\"]\n\n[[ ## completed ## ]]"
    form = body.get("response_format") or {}
    schema = form.get("schema") or (form.get("json_schema") or {}).get("schema") or {}
    answer = (schema.get("properties") or {}).get("answer")
    if answer is not None:
        return json.dumps({"answer": answer["enum"][0]})
    return "Noted."


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    registry.available_kinds()  # the built-in kinds registered for good before the copy the test may add to
    isolate(monkeypatch, registry.AGENTS)
    monkeypatch.setenv("MEMEVO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MEMEVO_MODEL", "fake-model")
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    with FaultServer(reply) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)  # every role without a base_url of its own
        yield server


def test_the_example_evaluates_and_evolves_its_own_agent_on_its_own_data(endpoint: Any, tmp_path: Path) -> None:
    scored, found = api_example.main(endpoint.url, tmp_path)

    assert scored.policy.kind == "notes" and scored.out == tmp_path / "eval"
    assert scored.scores.n_questions == 4 * 2 * 2  # users x periods x questions
    assert len(scored.user_scores) == 4 and scored.usage.calls > 0
    assert (scored.out / "summary.json").is_file() and (scored.out / "questions.csv").is_file()
    systems = [r["messages"][0]["content"] for r in endpoint.requests if r["messages"][0]["role"] == "system"]
    assert any(text.startswith("You are a helpful assistant. What the user told you") and "my commute is now" in text
               for text in systems)  # the example's own agent ran, with the notes it kept

    assert found.seed.policy.kind == "notes" and found.candidates[0] == found.seed
    proposed = found.candidates[1:]
    assert len(proposed) == 1 and proposed[0].policy.prompts["system_prompt"].endswith(ADDED_RULE)
    assert [outcome.generation for outcome in found.generations] == [0, 1]
    assert found.best_policy.prompts == {"system_prompt": found.best.policy.prompts.get(
        "system_prompt", api_example.SYSTEM_PROMPT.default)} and found.best_test_scores.n_questions == 2 * 2 * 2
    assert [row.id for row in found.candidate_rows] == [candidate.id for candidate in found.candidates]
    recorded = {decision["candidate_id"]: decision for gen in ("gen_000", "gen_001") for decision in json.loads(
        (found.run_dir / "generations" / gen / "decisions.json").read_text())["decisions"]}
    assert [(row.label, row.state, row.fate) for row in found.candidate_rows] == [
        (recorded[row.id]["label"], recorded[row.id]["state"], recorded[row.id]["text"]) for row in found.candidate_rows]
    assert found.candidate_rows[0].fate.startswith("kept: the seed") and found.candidate_rows[0].val is not None
    assert found.candidate_rows[1].state in {"kept", "accepted", "rejected"}
    seed_cost = found.candidate_rows[0]
    assert seed_cost.cost_calls and seed_cost.cost_tokens and seed_cost.cost_dollars is not None  # its episodes ran
    assert sum(row.cost_calls or 0 for row in found.candidate_rows) < len(endpoint.requests)  # proposals not in them
    assert len(found.seed_test_user_scores) == len(found.best_test_user_scores) == 2
    assert found.test_comparison.n == 2

    text = str(found)  # print(result): a summary, not a dump of every field
    states = [row.state for row in found.candidate_rows]
    assert f"over 2 generation(s) ({states.count('kept')} kept" in text  # counted from the decision records
    assert f"test accuracy: seed {found.seed_test_scores.accuracy:.3f} -> best " in text
    assert "over 2 test user(s); paired t p" in text and f"memevo ui --run-dir {found.run_dir}" in text
    spent = found.usage.total()
    assert f"cost: {spent.calls - spent.cache_hits} call(s) sent ({spent.cache_hits} cached)" in text
    assert ("best is the seed" in text) if found.best == found.seed else ("added a rule" in text)
    assert found._repr_markdown_().startswith("- memevo.optimize: 2 candidate(s) over 2 generation(s)")
    assert f"`memevo ui --run-dir {found.run_dir}`" in found._repr_markdown_()

    as_json = CliRunner().invoke(app, ["report", str(found.run_dir), "--format", "json"])
    assert as_json.exit_code == 0, as_json.output
    data = json.loads(as_json.output)
    assert data["best"]["id"] == found.best.id and data["test_comparison"]["n"] == 2
    assert [row["id"] for row in data["candidates"]] == [row.id for row in found.candidate_rows]
    as_csv = CliRunner().invoke(app, ["report", str(found.run_dir), "--format", "csv"])
    lines = as_csv.output.splitlines()
    assert lines[0] == "id,label,generation,origin,train,val,state,fate,cost_calls,cost_tokens,cost_dollars"
    assert len(lines) == 1 + len(found.candidate_rows)
    as_text = CliRunner().invoke(app, ["report", str(found.run_dir)])
    assert as_text.exit_code == 0, as_text.output
    assert all(f"| {row.label} | {row.origin} |" in as_text.output and f"| {row.fate} |" in as_text.output
               for row in found.candidate_rows)
    compared = CliRunner().invoke(app, ["compare", str(found.run_dir), str(found.run_dir)])
    assert compared.exit_code == 0, compared.output
    assert "best prompts: the same" in compared.output and compared.output.count("best ") >= 2
    assert f"  A: 2 candidate(s): {states.count('kept')} kept" in compared.output

    decisions_file = found.run_dir / "generations" / "gen_001" / "decisions.json"  # the record, not re-derived
    edited = json.loads(decisions_file.read_text())
    edited["decisions"][0] |= {"state": "pruned", "text": "pruned: as the record says"}
    decisions_file.write_text(json.dumps(edited))
    data = json.loads(CliRunner().invoke(app, ["report", str(found.run_dir), "--format", "json"]).output)
    assert (data["candidates"][1]["state"], data["candidates"][1]["fate"]) == ("pruned", "pruned: as the record says")
    decisions_file.unlink()  # a run folder from before decision records: n/a and why
    data = json.loads(CliRunner().invoke(app, ["report", str(found.run_dir), "--format", "json"]).output)
    assert data["candidates"][1]["state"] is None and data["candidates"][1]["fate"].startswith("n/a: ")
    decisions_file.write_text("{")
    damaged = CliRunner().invoke(app, ["report", str(found.run_dir), "--format", "csv"])
    assert isinstance(damaged.exception, UserInputError) and "decisions.json: " in str(damaged.exception)
    assert "restore it from a copy" in str(damaged.exception)
    decisions_file.write_text(json.dumps(edited))
    refused = CliRunner().invoke(app, ["compare", str(found.run_dir), str(tmp_path)])
    assert isinstance(refused.exception, UserInputError) and refused.exception.field == "RUN_B"
    saved = list((found.run_dir / "python-inputs").glob("items-*.json"))
    assert len(saved) == 1 and len(json.loads(saved[0].read_text())) == 4  # the run folder keeps its data

    assert found.mlflow is not None
    with sqlite3.connect(found.mlflow.tracking_uri.removeprefix("sqlite:///")) as db:
        run_ids = {row[0] for row in db.execute("SELECT run_uuid FROM runs")}
    assert found.mlflow.parent_run_id in run_ids
    assert set(found.mlflow.candidate_run_ids.values()) <= run_ids
    assert any(label.startswith("g1c0-") for label in found.mlflow.candidate_run_ids)
    with sqlite3.connect(found.mlflow.tracking_uri.removeprefix("sqlite:///")) as db:
        seed_run = found.mlflow.candidate_run_ids[found.seed.label]
        logged = dict(db.execute("SELECT key, value FROM latest_metrics WHERE run_uuid = ? AND key = 'cost_calls'",
                                 (seed_run,)).fetchall())
    assert logged == {"cost_calls": seed_cost.cost_calls}


def test_an_evaluation_from_files_resumes_the_one_from_objects(endpoint: Any, tmp_path: Path) -> None:
    users = api_example.make_users(2)
    policy = MemoryPolicy(kind="notes", llm={"base_url": endpoint.url})
    first = evaluate(policy, users, out=tmp_path / "eval", agent_class=api_example.NotesAgent)
    calls = len(endpoint.requests)
    policy_file = next((tmp_path / "eval" / "python-inputs").glob("policy-*.json"))
    save_items(users, tmp_path / "users.json")
    again = evaluate(policy_file, tmp_path / "users.json", out=tmp_path / "eval", resume=True)
    assert len(endpoint.requests) == calls  # everything was finished: nothing asked again
    assert again.scores == first.scores and again.policy == policy


def test_bad_input_names_its_field(endpoint: Any, tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match="policy"):
        evaluate(None, api_example.make_users(2), out=tmp_path / "a")
    with pytest.raises(UserInputError, match="policy.kind"):
        evaluate(MemoryPolicy(kind="native"), api_example.make_users(2), out=tmp_path / "b",
                 agent_class=api_example.NotesAgent)
    with pytest.raises(UserInputError, match="data"):
        optimize(MemoryPolicy(kind="native"), [], run_dir=tmp_path / "c")
    with pytest.raises(UserInputError, match="budget.generations"):
        optimize(MemoryPolicy(kind="native"), api_example.make_users(4), run_dir=tmp_path / "d",
                 config={"budget": {"generations": -1}})
    assert not (tmp_path / "d").exists()
    with pytest.raises(UserInputError, match="split"):  # refused once the data is read: what was saved goes again
        optimize(MemoryPolicy(kind="native"), api_example.make_users(4), run_dir=tmp_path / "e",
                 config={"components": ["system_prompt"], "split": {"train": 3, "val": 3, "test": 3}})
    assert not (tmp_path / "e").exists()


async def test_a_notebook_with_its_event_loop_running_can_evaluate(endpoint: Any, tmp_path: Path) -> None:
    """Jupyter runs cells inside an event loop, where ``asyncio.run`` is refused: the work goes to a thread."""
    result = evaluate(MemoryPolicy(kind="notes", llm={"base_url": endpoint.url}), api_example.make_users(1),
                      out=tmp_path / "eval", agent_class=api_example.NotesAgent)
    assert result.scores.n_questions == 2 * 2


def test_evaluate_runs_without_the_command_line(endpoint: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The API calls ``environments.evaluate`` as ``memevo eval`` does, not the command: importing the command line
    fails here, and the evaluation still runs."""
    for module in ("memevo.evolve.cli.main", "memevo.environments.eval_cli"):
        monkeypatch.setitem(sys.modules, module, None)  # type: ignore[arg-type]
    result = evaluate(MemoryPolicy(kind="notes", llm={"base_url": endpoint.url}), api_example.make_users(1),
                      out=tmp_path / "eval", agent_class=api_example.NotesAgent)
    assert result.scores.n_questions == 2 * 2 and (tmp_path / "eval" / "summary.json").is_file()


EXAMPLE_CONFIG = {"components": ["system_prompt"], "upper_bound": False, "split": {"train": 1, "val": 1, "test": 2},
                  "budget": {"generations": 1, "candidates": 1}, "episode": {"rounds_init": 1, "rounds_update": 1}}


def interrupt_once_past(endpoint: Any, requests: int) -> list[float]:
    """Makes ``endpoint`` reply slowly and interrupt this process (SIGINT) once, at the first request past
    ``requests``; returns the list that gets the time it did.

    Requests arrive on several threads, so the count can pass the mark between two looks: ``>=`` under a lock, not
    ``==``."""
    sent: list[float] = []
    interrupt_lock = threading.Lock()

    def interrupting(body: dict[str, Any]) -> str:
        with interrupt_lock:
            if len(endpoint.requests) >= requests and not sent:
                sent.append(time.monotonic())
                os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)
        return reply(body)

    endpoint.reply = interrupting
    return sent


async def test_an_interrupt_in_a_notebook_stops_the_run_within_seconds_and_it_resumes(endpoint: Any,
                                                                                      tmp_path: Path) -> None:
    """A notebook's stop button is SIGINT to the thread that waits for the run (its event loop running): the run is
    cancelled at once rather than the interrupt waiting for the run's end, and a resume finishes it."""
    sent = interrupt_once_past(endpoint, 20)  # the run's start-up work done
    policy = MemoryPolicy(kind="notes", llm={"base_url": endpoint.url})
    arguments: dict[str, Any] = {"run_dir": tmp_path / "run", "config": EXAMPLE_CONFIG,
                                 "agent_class": api_example.NotesAgent}
    with pytest.raises(Interrupted, match="resume=True"):
        optimize(policy, api_example.make_users(4), **arguments)
    assert sent and time.monotonic() - sent[0] < 10
    endpoint.reply = reply
    with pytest.raises(UserInputError, match="pass resume=True to continue it or choose another run_dir") as again:
        optimize(policy, api_example.make_users(4), **arguments)
    assert again.value.field == "run_dir"
    found = optimize(policy, api_example.make_users(4), resume=True, **arguments)
    assert [outcome.generation for outcome in found.generations] == [0, 1]


async def test_an_interrupted_evaluation_in_a_notebook_stops_within_seconds_and_resumes(endpoint: Any,
                                                                                       tmp_path: Path) -> None:
    """As ``optimize``: SIGINT to the notebook's thread cancels the evaluation's own loop in its worker at once, the
    periods it finished stay saved, and ``resume=True`` plays only the rest."""
    sent = interrupt_once_past(endpoint, 24)  # the first period (16 requests) done
    policy = MemoryPolicy(kind="notes", llm={"base_url": endpoint.url})
    arguments: dict[str, Any] = {"out": tmp_path / "eval", "agent_class": api_example.NotesAgent, "use_cache": False}
    with pytest.raises(Interrupted, match=r"memevo\.evaluate\(\.\.\., out=.*, resume=True\)"):
        evaluate(policy, api_example.make_users(4), **arguments)
    assert sent and time.monotonic() - sent[0] < 10
    saved = sorted((tmp_path / "eval" / "run").rglob("period_*.json*"))
    assert saved  # the periods finished before the interrupt are kept
    endpoint.reply = reply
    before = len(endpoint.requests)
    resumed = evaluate(policy, api_example.make_users(4), resume=True, **arguments)
    resume_requests = len(endpoint.requests) - before
    fresh = evaluate(policy, api_example.make_users(4), out=tmp_path / "fresh", agent_class=api_example.NotesAgent,
                     use_cache=False)
    assert resumed.scores == fresh.scores and resumed.scores.n_questions == 4 * 2 * 2
    assert resume_requests < fresh.usage.calls  # the resume asked only what was not finished


def test_errors_from_the_shared_checks_name_python_arguments_not_flags(endpoint: Any, tmp_path: Path) -> None:
    """The run-folder checks ``memevo eval`` and ``memevo evolve`` share speak to a Python caller in its own words."""
    policy = MemoryPolicy(kind="notes", llm={"base_url": endpoint.url})
    users = api_example.make_users(1)
    with pytest.raises(UserInputError) as nothing:
        evaluate(policy, users, out=tmp_path / "empty", agent_class=api_example.NotesAgent, resume=True)
    assert nothing.value.field == "resume" and "--" not in str(nothing.value)
    evaluate(policy, users, out=tmp_path / "eval", agent_class=api_example.NotesAgent)
    with pytest.raises(UserInputError, match=r"pass resume=True to continue it") as again:
        evaluate(policy, users, out=tmp_path / "eval", agent_class=api_example.NotesAgent)
    assert "--" not in str(again.value)
    with pytest.raises(UserInputError) as other_kind:
        optimize(policy, api_example.make_users(4), run_dir=tmp_path / "eval", config=EXAMPLE_CONFIG,
                 agent_class=api_example.NotesAgent)
    assert other_kind.value.field == "run_dir" and "choose another run_dir" in str(other_kind.value)

    save_items(users, tmp_path / "users.json")
    policy_file = next((tmp_path / "eval" / "python-inputs").glob("policy-*.json"))
    refused = CliRunner().invoke(app, ["eval", "--agent", str(policy_file), "--env", str(tmp_path / "users.json"),
                                       "--out", str(tmp_path / "empty"), "--resume"])  # the command line: its flags
    assert isinstance(refused.exception, UserInputError) and refused.exception.field == "--resume"
