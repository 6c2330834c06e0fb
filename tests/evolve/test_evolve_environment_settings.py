"""An evolution's environment settings, at start-up and in its report: an environment that judges answers (here the cross-benchmark
test's LongMemEval) without ``llm.judge`` stops the run before any call, naming the config file and field; a judge
added when the run is resumed is accepted (a run without one judged nothing), a changed one is not; MemoryBench's
``data.dialog_field`` reaches its reader, and is refused for other environments; a report shows only the figures
the environment measures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memevo.agents.llm.config import LLMConfig
from memevo.core.errors import UserInputError
from memevo.environments.registry import ENVIRONMENTS
from memevo.evolve.loop import run_evolution
from memevo.evolve.presentation.report import report_run
from memevo.evolve.runtime import read_users
from tests.doubles.category_backend import CategoryBackend, CategoryHub, category_world
from tests.doubles.registries import register_for_test
from tests.environments.test_env_longmemeval import record
from tests.environments.test_env_longmemeval import write as write_longmemeval
from tests.environments.test_env_memorybench import snapshot
from tests.environments.test_environment_evolve import config, replayed, write_replay

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")


def test_a_judged_test_environment_without_a_judge_stops_before_any_call(tmp_path: Path) -> None:
    judged = write_longmemeval(tmp_path, [record("q1", "single-session-user")])
    settings = config(tmp_path, test_environment={"environment": "longmemeval", "data": {"path": str(judged)}})
    settings = settings.model_copy(update={"source": tmp_path / "evolve.yaml"})
    backend = CategoryBackend(category_world(6, 2))
    with pytest.raises(UserInputError, match="longmemeval.*test_environment.data.*configure llm.judge") as caught:
        run_evolution(settings, run_dir=tmp_path / "run", hub=CategoryHub(backend), resume=False)
    assert caught.value.field == "llm.judge" and caught.value.source == str(tmp_path / "evolve.yaml")
    assert backend.calls == [] and not (tmp_path / "run").exists()


def test_a_judge_added_on_resume_is_recorded_and_a_changed_one_refused(tmp_path: Path) -> None:
    backend = CategoryBackend(category_world(6, 2))
    run_dir = tmp_path / "run"
    run_evolution(config(tmp_path, budget={"generations": 0}), run_dir=run_dir, hub=CategoryHub(backend), resume=False)
    judge = {"llm": {"judge": {"model": "judge-one"}}}
    run_evolution(config(tmp_path, budget={"generations": 0}, **judge), run_dir=run_dir, hub=CategoryHub(backend),
                  resume=True)
    assert json.loads((run_dir / "inputs.json").read_text())["config"]["llm"]["judge"]["model"] == "judge-one"
    changed = {"llm": {"judge": {"model": "judge-two"}}}
    with pytest.raises(UserInputError) as caught:
        run_evolution(config(tmp_path, budget={"generations": 0}, **changed), run_dir=run_dir,
                      hub=CategoryHub(backend), resume=True)
    assert caught.value.field == "config.llm.judge.model"


def test_the_configured_dialog_field_reaches_memorybench_and_no_other_environment(tmp_path: Path) -> None:
    data = {"path": str(snapshot(tmp_path / "MemoryBench")), "dialog_field": "dialog_a_mem"}
    users, _ = read_users(config(tmp_path, environment="memorybench", data=data, llm={"judge": {"model": "judge"}}))
    locomo = next(user for user in users if user.id == "Locomo-0")
    assert locomo.sessions[1].exchanges()[0] == ("Is Rex a cat?", "No, a dog.")
    with pytest.raises(UserInputError) as caught:
        config(tmp_path, environment="locomo", data=data)
    assert caught.value.field == "data.dialog_field"


class NoClientHub(CategoryHub):
    """A hub whose every client is a failure: a client may start the embedded model, seconds of work."""

    def client(self, config: LLMConfig) -> CategoryBackend:
        raise AssertionError(f"a client for {config.model} was asked for")


def test_data_in_another_format_is_refused_before_any_client_starts(tmp_path: Path) -> None:
    wrong = write_longmemeval(tmp_path, [record("q1", "single-session-user")])
    settings = config(tmp_path, environment="locomo", data={"path": str(wrong)})
    with pytest.raises(UserInputError) as caught:
        run_evolution(settings, run_dir=tmp_path / "run", hub=NoClientHub(CategoryBackend([])), resume=False)
    assert caught.value.source == str(wrong) and caught.value.field == "[0].sample_id"


def test_a_report_on_another_environment_shows_only_what_it_measures(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    register_for_test(monkeypatch, ENVIRONMENTS, "locomo", "tests.doubles.replay_environment:TinyReplayEnvironment")
    data = write_replay(tmp_path / "bench.json", replayed(category_world(6, 2)))
    settings = config(tmp_path, environment="locomo", data={"path": str(data)}, budget={"generations": 0},
                      episode={"rounds_init": 1, "rounds_update": 1, "diagnose": True})
    run_evolution(settings, run_dir=tmp_path / "run", hub=CategoryHub(CategoryBackend(category_world(6, 2))),
                  resume=False)
    report = report_run(tmp_path / "run")
    test_table = next(line for line in report.splitlines() if line.startswith("| candidate | test users |"))
    assert test_table == "| candidate | test users | accuracy | random | format errors | accuracy per period |"
    for amemgym_only in ("memory score", "write / read / utilization", "episode.diagnose"):
        assert amemgym_only not in report.replace("Environment locomo: no memory score and no write / read / "
                                                  "utilization split", "")
    assert "Environment locomo: no memory score and no write / read / utilization split" in report
    assert not (tmp_path / "run" / "report" / "test_failures.png").exists()
