"""Every bad input of issue 11, through the real ``memevo`` entry point: exit 2, one message naming the file
and the full field path, no traceback, no LLM request (a fault server stands in for the endpoint and must
see none) and no run folder left behind."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from memevo.environments.amemgym.data.io import save_items
from memevo.environments.amemgym.synth import SynthConfig, synthesize
from memevo.evolve.cli import main as cli
from tests.doubles.fault_server import FaultServer

FIXTURE = Path(__file__).parents[1] / "fixtures" / "amemgym_small.json"

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")

Data = list[dict[str, Any]]


def _fixture() -> Data:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def _no_periods(data: Data) -> Data:
    data[1]["periods"] = []
    return data


def _colliding_ids(data: Data) -> Data:
    data[0]["id"], data[1]["id"] = "a/b", "a_b"
    return data


def _duplicate_ids(data: Data) -> Data:
    data[1]["id"] = data[0]["id"]
    return data


def _id(number: int, user_id: str) -> Callable[[Data], Data]:
    """The data with item ``number``'s id (and its profile's uuid, as AMemGym writes them) set to ``user_id``."""

    def change(data: Data) -> Data:
        data[number]["id"] = data[number]["user_profile"]["uuid"] = user_id
        return data

    return change


BAD_IDS = [
    ("id ..", 1, "..", ["'[1].id'", "'..' would name the run folder itself or its parent"]),
    ("id .", 0, ".", ["'[0].id'", "'.' would name the run folder itself or its parent"]),
    ("empty id", 1, "", ["'[1].id'", "the id is empty"]),
    ("300-character id", 0, "u" * 300, ["'[0].id'", "300 characters long", "at most 128"]),
]
"""Ids that name no folder of their own: (case, item, id, what the one line must say besides the file)."""


def _no_gold(data: Data) -> Data:
    for choice in data[0]["qas"][1]["answer_choices"]:
        choice["state"] = ["nowhere"] * len(choice["state"])
    return data


class Case:
    """One bad input: how to break the data or the agent file or the output folder, and what must be named."""

    def __init__(
        self,
        name: str,
        expected: list[str],
        *,
        data: Callable[[Data], Data] | None = None,
        agent: str = "kind: native\n",
        env: str | None = None,
        out: Callable[[Path], Path] | None = None,
        command: str = "eval",
        extra: Callable[[Path], list[str]] | None = None,
    ) -> None:
        self.name, self.expected, self.data, self.agent, self.env, self.out = name, expected, data, agent, env, out
        self.command, self.extra = command, extra


def _file_out(tmp: Path) -> Path:
    (tmp / "taken").write_text("a file")
    return tmp / "taken"


def _under_file_out(tmp: Path) -> Path:
    (tmp / "taken").write_text("a file")
    return tmp / "taken" / "deeper" / "out"


def _read_only_out(tmp: Path) -> Path:
    (tmp / "locked").mkdir()
    (tmp / "locked").chmod(0o555)
    return tmp / "locked" / "out"


EVAL_CASES = [
    Case("data with periods: []", ["data.json", "'[1].periods'", "no periods"], data=_no_periods),
    Case("data with 0 users", ["data.json", "holds no users"], data=lambda data: []),
    Case("ids collide after sanitising", ["data.json", "'[1].id'", "'a/b'", "'a_b'", "collide"], data=_colliding_ids),
    Case("duplicate ids", ["data.json", "'[1].id'", "is used by items 0 and 1"], data=_duplicate_ids),
    Case("no gold choice", ["data.json", "'[0].qas[1].answer_choices'", "no answer choice"], data=_no_gold),
    *(Case(name, ["data.json", *expected], data=_id(number, user_id)) for name, number, user_id, expected in BAD_IDS),
    Case("missing local data path", ["nope/data.json", "no such file"], env="nope/data.json"),
    Case(
        "unknown placeholder",
        ["agent.yaml", "'prompts.system_prompt'", "unknown placeholder", "{usr_name}"],
        agent="kind: native\nprompts: {system_prompt: 'Hello {usr_name}'}\n",
    ),
    Case("unknown agent kind", ["agent.yaml", "'kind'", "unknown agent kind 'nativ'"], agent="kind: nativ\n"),
    Case(
        "missing placeholder",
        ["agent.yaml", "'prompts.answer_system_prompt'", "missing placeholder {memories}"],
        agent="kind: rag\nprompts: {answer_system_prompt: 'Answer well.'}\n",
    ),
    Case("--off-policy folder that does not exist", ["nowhere", "'--off-policy'", "holds no eval run to replay"],
         extra=lambda tmp: ["--off-policy", str(tmp / "nowhere")]),
    Case("--off-policy run with unfinished users", ["unfinished", "'--off-policy'", "has 0 of the"],
         extra=lambda tmp: (tmp / "unfinished" / "run").mkdir(parents=True) or ["--off-policy", str(tmp / "unfinished")]),
    Case("--out is a file", ["taken", "'--out'", "is a file"], out=_file_out),
    Case("--out under a file", ["deeper", "'--out'", "which is a file"], out=_under_file_out),
    Case("--out not writable", ["locked", "'--out'", "not writable"], out=_read_only_out),
]


def _run_memevo(
    args: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["memevo", *args])
    with pytest.raises(SystemExit) as exited:
        cli.main()
    code = exited.value.code
    return (code if isinstance(code, int) else 1), capsys.readouterr().err


@pytest.fixture
def endpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("MEMEVO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    with FaultServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("MEMEVO_MODEL", "gpt-4.1-mini")
        yield server


def test_a_broken_response_cache_exits_2_naming_it_before_any_request(
    tmp_path: Path, endpoint: FaultServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "cache.db").write_text("not a database")
    data = tmp_path / "data.json"
    data.write_text(json.dumps(_fixture()), encoding="utf-8")
    (tmp_path / "agent.yaml").write_text("kind: native\n", encoding="utf-8")
    code, err = _run_memevo(["eval", "--agent", str(tmp_path / "agent.yaml"), "--env", str(data), "--out",
                             str(tmp_path / "out"), "--simulator", "template"], monkeypatch, capsys)
    assert code == 2 and "Traceback" not in err
    assert err.startswith(f"memevo: error: {tmp_path / 'cache'}: the LLM response cache cannot be opened"), err
    assert endpoint.requests == []


@pytest.mark.parametrize("case", EVAL_CASES, ids=[case.name for case in EVAL_CASES])
def test_bad_eval_input_exits_2_naming_file_and_field(
    case: Case,
    tmp_path: Path,
    endpoint: FaultServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if case.out is _read_only_out and os.geteuid() == 0:
        pytest.skip("root writes anywhere")
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "data.json"
    data.write_text(json.dumps((case.data or (lambda d: d))(_fixture())), encoding="utf-8")
    agent = tmp_path / "agent.yaml"
    agent.write_text(case.agent, encoding="utf-8")
    out = case.out(tmp_path) if case.out else tmp_path / "out"
    extra = case.extra(tmp_path) if case.extra else []
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if "cache" not in p.parts)
    code, err = _run_memevo(
        ["eval", "--agent", str(agent), "--env", case.env or str(data), "--out", str(out), "--simulator", "template",
         *extra],
        monkeypatch,
        capsys,
    )
    assert code == 2, err
    assert err.startswith("memevo: error: ") and "Traceback" not in err
    for part in case.expected:
        assert part in err, f"{part!r} not in {err!r}"
    assert endpoint.requests == []
    after = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if "cache" not in p.parts)
    assert after == before  # nothing claimed, nothing created


def _evolve_config(tmp_path: Path, **changes: Any) -> Path:
    save_items(synthesize(SynthConfig(users=3, periods=1, questions=2)), tmp_path / "data.json")
    config: dict[str, Any] = {
        "seed": {"policy": {"kind": "awi"}},
        "data": {"path": "data.json"},
        "split": {"train": 1, "val": 1, "test": 1},
        "budget": {"generations": 1, "candidates": 1},
        "tracking": {"enabled": False},
        **changes,
    }
    path = tmp_path / "evolve.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


EVOLVE_CASES = [
    ("unknown agent kind", {"seed": {"policy": {"kind": "awii"}}}, ["evolve.yaml", "'seed.policy.kind'"]),
    (
        "missing placeholder",
        {"seed": {"policy": {"kind": "awi", "prompts": {"write_prompt": "Write notes."}}}},
        ["evolve.yaml", "'seed.policy.prompts.write_prompt'", "missing placeholder {current_memories}"],
    ),
    (
        "unknown placeholder",
        {"seed": {"policy": {"kind": "awi", "prompts": {"memory_types": "- {hobby}"}}}},
        ["evolve.yaml", "'seed.policy.prompts.memory_types'", "unknown placeholder(s) {hobby}"],
    ),
    ("missing local data path", {"data": {"path": "nope/data.json"}}, ["nope/data.json", "no such file"]),
    (
        "in-episode protocol with a minibatch",
        {"protocol": "amemgym_period", "strategy": {"minibatch": 1}},
        ["evolve.yaml", "'strategy.minibatch'", "amemgym_period protocol", "outer_loop only"],
    ),
    ("negative resamples", {"strategy": {"resamples": -1}},
     ["evolve.yaml", "'strategy.resamples'", "greater than or equal to 0"]),
]


@pytest.mark.parametrize(("name", "changes", "expected"), EVOLVE_CASES, ids=[case[0] for case in EVOLVE_CASES])
def test_bad_evolve_input_exits_2_naming_file_and_field(
    name: str,
    changes: dict[str, Any],
    expected: list[str],
    tmp_path: Path,
    endpoint: FaultServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = _evolve_config(tmp_path, **changes)
    run_dir = tmp_path / "run"
    code, err = _run_memevo(["evolve", str(config), "--run-dir", str(run_dir)], monkeypatch, capsys)
    assert code == 2, err
    assert "Traceback" not in err
    for part in expected:
        assert part in err, f"{part!r} not in {err!r}"
    assert endpoint.requests == [] and not run_dir.exists()


def test_evolve_data_without_periods_exits_2_before_any_call(
    tmp_path: Path, endpoint: FaultServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _evolve_config(tmp_path)
    data = json.loads((tmp_path / "data.json").read_text(encoding="utf-8"))
    data[2]["periods"] = []
    (tmp_path / "data.json").write_text(json.dumps(data), encoding="utf-8")
    code, err = _run_memevo(["evolve", str(config), "--run-dir", str(tmp_path / "run")], monkeypatch, capsys)
    assert code == 2 and "data.json" in err and "'[2].periods'" in err, err
    assert endpoint.requests == [] and not (tmp_path / "run").exists()


def test_evolve_run_dir_that_is_a_file_exits_2(
    tmp_path: Path, endpoint: FaultServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _evolve_config(tmp_path)
    (tmp_path / "run").write_text("not a folder")
    code, err = _run_memevo(["evolve", str(config), "--run-dir", str(tmp_path / "run")], monkeypatch, capsys)
    assert code == 2 and "'--run-dir'" in err and "is a file" in err, err
    assert endpoint.requests == []


@pytest.mark.parametrize(("name", "number", "user_id", "expected"), BAD_IDS, ids=[case[0] for case in BAD_IDS])
def test_evolve_refuses_an_id_that_names_no_folder(
    name: str, number: int, user_id: str, expected: list[str], tmp_path: Path, endpoint: FaultServer,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    config = _evolve_config(tmp_path)
    data = tmp_path / "data.json"
    data.write_text(json.dumps(_id(number, user_id)(json.loads(data.read_text(encoding="utf-8")))), encoding="utf-8")
    code, err = _run_memevo(["evolve", str(config), "--run-dir", str(tmp_path / "run")], monkeypatch, capsys)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"memevo: error: {data}, field "), err
    for part in expected:
        assert part in err, f"{part!r} not in {err!r}"
    assert endpoint.requests == [] and not (tmp_path / "run").exists()


@pytest.mark.parametrize(("name", "number", "user_id", "expected"), BAD_IDS, ids=[case[0] for case in BAD_IDS])
def test_env_validate_reports_an_id_that_names_no_folder(
    name: str, number: int, user_id: str, expected: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = tmp_path / "data.json"
    data.write_text(json.dumps(_id(number, user_id)(_fixture())), encoding="utf-8")
    monkeypatch.setattr(sys, "argv", ["memevo", "env", "validate", str(data)])
    with pytest.raises(SystemExit) as exited:
        cli.main()
    out = capsys.readouterr().out
    assert exited.value.code == 2, out
    errors = [line for line in out.splitlines() if line.startswith("ERROR [item-id]")]
    assert len(errors) == 1, out
    for part in expected:
        assert part in errors[0], f"{part!r} not in {errors[0]!r}"
    assert out.splitlines()[-1].startswith(f"{data}: 2 items: 1 errors"), out


def test_an_id_with_path_characters_is_mapped_to_one_folder_and_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data.json"
    data.write_text(json.dumps(_id(0, "../x y")(_fixture())), encoding="utf-8")
    monkeypatch.setattr(sys, "argv", ["memevo", "env", "validate", str(data)])
    with pytest.raises(SystemExit) as exited:
        cli.main()
    out = capsys.readouterr().out
    assert exited.value.code in (None, 0), out
    assert "WARNING [item-id] item '../x y', field '[0].id': stored in the run folder 'users/.._x_y'" in out, out


def _ablation_config(tmp_path: Path) -> Path:
    _evolve_config(tmp_path)
    path = tmp_path / "ablation.yaml"
    path.write_text(yaml.safe_dump({"name": "abl", "base": "evolve.yaml", "seeds": [0],
                                    "arms": [{"name": "a", "overrides": {}}, {"name": "b", "overrides": {}}]}),
                    encoding="utf-8")
    return path


def _command(command: str, tmp_path: Path, folder: Path) -> list[str]:
    """``command`` with ``--resume`` on ``folder``."""
    if command == "eval":
        (tmp_path / "agent.yaml").write_text("kind: native\n", encoding="utf-8")
        return ["eval", "--agent", str(tmp_path / "agent.yaml"), "--env", str(FIXTURE), "--out",
                str(folder), "--simulator", "template", "--resume"]
    config = _ablation_config(tmp_path) if command == "ablate" else _evolve_config(tmp_path)
    return [command, str(config), "--run-dir", str(folder), "--resume"]


KIND_CASES = [
    # (made by, marker file it holds, command run on it, kind the command makes)
    ("evolution", "run_kind.json", "ablate", "ablation"),
    ("ablation", "run_kind.json", "evolve", "evolution"),
    ("eval", "run_kind.json", "evolve", "evolution"),
    ("evolution", "run_kind.json", "eval", "eval"),
    ("evolution", "config.json", "ablate", "ablation"),  # folders from before run_kind.json: known by their files
    ("ablation", "ablation.json", "evolve", "evolution"),
    ("eval", "run", "ablate", "ablation"),
]


@pytest.mark.parametrize(("made_by", "marker", "command", "kind"), KIND_CASES,
                         ids=[f"{case[2]} --resume on {case[0]} ({case[1]})" for case in KIND_CASES])
def test_another_kind_of_run_folder_is_refused_naming_both_kinds_and_left_as_it_is(
    made_by: str, marker: str, command: str, kind: str, tmp_path: Path, endpoint: FaultServer,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    folder = tmp_path / "taken"
    folder.mkdir()
    if marker == "run":
        (folder / "run").mkdir()
    else:
        (folder / marker).write_text(json.dumps({"kind": made_by} if marker == "run_kind.json" else {}))
    args = _command(command, tmp_path, folder)
    before = {path: path.read_bytes() if path.is_file() else None for path in folder.rglob("*")}
    code, err = _run_memevo(args, monkeypatch, capsys)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    made_with = {"evolution": "memevo evolve", "ablation": "memevo ablate", "eval": "memevo eval"}
    assert err.startswith(f"memevo: error: {folder}, field '--{'out' if command == 'eval' else 'run-dir'}': "), err
    assert f"holds an {made_by} run (made by {made_with[made_by]})" in err or \
        f"holds a {made_by} run (made by {made_with[made_by]})" in err, err
    assert f"not {'an' if kind[0] in 'aeiou' else 'a'} {kind} run: {made_with[kind]} cannot start or resume" in err
    assert endpoint.requests == []
    assert {path: path.read_bytes() if path.is_file() else None for path in folder.rglob("*")} == before



def _file(tmp: Path, name: str = "a-file") -> Path:
    (tmp / name).write_text("not a folder nor a database")
    return tmp / name


STORE_CASES: list[tuple[str, Callable[[Path], dict[str, Any]], str, list[str]]] = [
    # (case, config changes given the test folder, field, what the one line must say)
    ("empty name", lambda tmp: {"name": ""}, "name", ["is empty", "MLflow experiment, the Optuna study"]),
    ("name with path separators", lambda tmp: {"name": "../../etc/x y"}, "name",
     ["'../../etc/x y' is not a plain name", "letters, digits, '.', '_' and '-' only"]),
    ("postgresql tracking URI without its driver", lambda tmp: {"tracking": {"uri": "postgresql://u:p@db.example/mlflow"}},
     "tracking.uri", ["needs the driver module 'psycopg'", "pip install 'psycopg[binary]'"]),
    ("tracking folder under a file", lambda tmp: {"tracking": {"uri": str(_file(tmp) / "mlruns")}}, "tracking.uri",
     ["lies under", "which is a file"]),
    ("tracking URI of an unknown kind", lambda tmp: {"tracking": {"uri": "ftp://example/mlruns"}}, "tracking.uri",
     ["unknown kind of store 'ftp'"]),
    ("optuna storage in a missing folder", lambda tmp: {"optuna": {"storage": "sqlite:////nonexistent/dir/x.db"}},
     "optuna.storage", ["the folder /nonexistent/dir does not exist"]),
    ("optuna storage that is no database", lambda tmp: {"optuna": {"storage": f"sqlite:///{_file(tmp)}"}},
     "optuna.storage", ["is not an SQLite database"]),
    ("optuna storage in memory", lambda tmp: {"optuna": {"storage": "sqlite://"}}, "optuna.storage",
     ["in-memory database", "a resume needs it"]),
    ("optuna storage with a missing MySQL driver", lambda tmp: {"optuna": {"storage": "mysql+pymysql://u@h/db"}},
     "optuna.storage", ["needs the driver module 'pymysql'", "pip install 'PyMySQL'"]),
]
HIDDEN_DRIVERS = {"postgresql tracking URI without its driver": "psycopg"}
"""Driver modules a case makes unimportable, so it holds whether or not the driver is installed (the
many-worker tests install psycopg)."""


@pytest.mark.parametrize(("name", "changes", "field", "expected"), STORE_CASES, ids=[case[0] for case in STORE_CASES])
def test_a_bad_store_or_name_exits_2_before_any_call(
    name: str, changes: Callable[[Path], dict[str, Any]], field: str, expected: list[str], tmp_path: Path,
    endpoint: FaultServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    if name in HIDDEN_DRIVERS:
        monkeypatch.setitem(sys.modules, HIDDEN_DRIVERS[name], None)  # ``import psycopg`` now raises ImportError
    change = changes(tmp_path)
    config = _evolve_config(tmp_path, **{**change, "tracking": {"enabled": True, **change.get("tracking", {})}})
    code, err = _run_memevo(["evolve", str(config), "--run-dir", str(tmp_path / "run")], monkeypatch, capsys)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"memevo: error: {config.resolve()}, field '{field}': "), err
    for part in expected:
        assert part in err, f"{part!r} not in {err!r}"
    assert endpoint.requests == [] and not (tmp_path / "run").exists()


ABLATION_STORE_CASES = [
    ("ablation name with a path separator", {"name": "a/b"}, "name", ["'a/b' is not a plain name"]),
    ("ablation tracking URI under a file", {"tracking_uri": "FILE/mlruns"}, "tracking_uri", ["which is a file"]),
]


@pytest.mark.parametrize(("name", "changes", "field", "expected"), ABLATION_STORE_CASES,
                         ids=[case[0] for case in ABLATION_STORE_CASES])
def test_a_bad_ablation_store_or_name_exits_2_before_any_call(
    name: str, changes: dict[str, Any], field: str, expected: list[str], tmp_path: Path, endpoint: FaultServer,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    path = _ablation_config(tmp_path)
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data.update({key: value.replace("FILE", str(_file(tmp_path))) for key, value in changes.items()})
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    code, err = _run_memevo(["ablate", str(path), "--run-dir", str(tmp_path / "run")], monkeypatch, capsys)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"memevo: error: {path.resolve()}, field '{field}': "), err
    for part in expected:
        assert part in err, f"{part!r} not in {err!r}"
    assert endpoint.requests == [] and not (tmp_path / "run").exists()


def test_an_arm_with_a_bad_optuna_storage_is_named(
    tmp_path: Path, endpoint: FaultServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _ablation_config(tmp_path)
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["arms"][1]["overrides"] = {"optuna": {"storage": "sqlite:////nonexistent/dir/x.db"}}
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    code, err = _run_memevo(["ablate", str(path), "--run-dir", str(tmp_path / "run")], monkeypatch, capsys)
    assert code == 2 and "Traceback" not in err, err
    assert "field 'optuna.storage': arm 'b' (seed 0): " in err and "/nonexistent/dir does not exist" in err, err
    assert endpoint.requests == [] and not (tmp_path / "run").exists()


def test_an_experiment_whose_artifact_folder_is_gone_under_a_file_exits_2_before_any_call(
    tmp_path: Path, endpoint: FaultServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from mlflow import MlflowClient

    uri = f"sqlite:///{tmp_path / 'shared.db'}"
    MlflowClient(tracking_uri=uri).create_experiment("shared", artifact_location=(tmp_path / "old" / "art").as_uri())
    _file(tmp_path, "old")  # the folder the experiment was made with is now a file
    config = _evolve_config(tmp_path, name="shared", tracking={"enabled": True, "uri": uri})
    code, err = _run_memevo(["evolve", str(config), "--run-dir", str(tmp_path / "run")], monkeypatch, capsys)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"memevo: error: {config.resolve()}, field 'name': experiment 'shared' in "), err
    assert f"keeps its artifacts in {tmp_path / 'old' / 'art'}, and {tmp_path / 'old' / 'art'} lies under" in err, err
    assert endpoint.requests == [] and not (tmp_path / "run").exists()


def _half(text: str) -> str:
    return text[: len(text) // 2]


def _run_folder(files: dict[str, str]) -> Callable[[Path], Path]:
    """An earlier run's folder holding ``files`` (name -> text), some of them damaged."""

    def make(tmp: Path) -> Path:
        folder = tmp / "earlier"
        folder.mkdir()
        for name, text in files.items():
            (folder / name).write_text(text, encoding="utf-8")
        return folder

    return make


INPUTS = json.dumps({"data": {"u1": "0123456789abcdef"}, "config": {"seed": 0}})
DAMAGED_CASES = [
    # (case, command, the folder (None: a fresh one), data file text (None: valid), what the one line must say)
    ("inputs.json cut short", "eval", _run_folder({"run_kind.json": '{"kind": "eval"}', "inputs.json": _half(INPUTS)}),
     None, ["earlier/inputs.json: damaged: invalid JSON (", "restore it from a backup, or delete it "
            "and resume (the inputs given then are recorded again, unchecked"]),
    ("evolution inputs.json overwritten", "evolve", _run_folder({"run_kind.json": '{"kind": "evolution"}',
                                                                 "config.json": "{}", "inputs.json": "\x00\x01"}),
     None, ["earlier/inputs.json: damaged: ", "restore it from a backup, or delete it and resume"]),
    ("run_kind.json cut short in a folder without other files", "eval", _run_folder({"run_kind.json": '{"ki'}), None,
     ["earlier/run_kind.json: damaged: invalid JSON (Unterminated string starting at line 1 column 2)", "write {\"kind\": \"evolution\"}, "
      "\"ablation\" or \"eval\" into it, whichever command made the folder"]),
    ("data file cut short", "eval", None, "CUT", ["data.json: invalid JSON at line ", "Unterminated string"]),
    ("data file with text after the array", "eval", None, "[]\n[]", ["data.json: invalid JSON at line 2 column 1: "
                                                                      "Extra data"]),
    ("data file that is no JSON", "eval", None, "garbage", ["data.json: invalid JSON at line 1 column 1: Expecting "
                                                             "value"]),
    ("evolution data file cut short", "evolve", None, "CUT", ["data.json: invalid JSON at line "]),
]


@pytest.mark.parametrize(("name", "command", "folder", "data", "expected"), DAMAGED_CASES,
                         ids=[case[0] for case in DAMAGED_CASES])
def test_a_damaged_file_exits_2_in_one_line_naming_it_and_what_to_do(
    name: str, command: str, folder: Callable[[Path], Path] | None, data: str | None, expected: list[str],
    tmp_path: Path, endpoint: FaultServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    out = folder(tmp_path) if folder else tmp_path / "out"
    if command == "eval":
        (tmp_path / "agent.yaml").write_text("kind: native\n", encoding="utf-8")
        valid = FIXTURE.read_text(encoding="utf-8")
        (tmp_path / "data.json").write_text(_half(valid) if data == "CUT" else data or valid, encoding="utf-8")
        args = ["eval", "--agent", str(tmp_path / "agent.yaml"), "--env", str(tmp_path / "data.json"), "--out",
                str(out), "--simulator", "template", *(["--resume"] if folder else [])]
    else:
        config = _evolve_config(tmp_path)
        if data is not None:
            valid = (tmp_path / "data.json").read_text(encoding="utf-8")
            (tmp_path / "data.json").write_text(_half(valid) if data == "CUT" else data, encoding="utf-8")
        args = ["evolve", str(config), "--run-dir", str(out), *(["--resume"] if folder else [])]
    before = {path: path.read_bytes() for path in out.rglob("*") if path.is_file()}
    code, err = _run_memevo(args, monkeypatch, capsys)
    *progress, line = err.strip().splitlines()
    assert code == 2 and "Traceback" not in err, err
    assert line.startswith("memevo: error: ") and all(re.match(r"\d\d:\d\d:\d\d ", other) for other in progress), err
    for part in expected:
        assert part in line, f"{part!r} not in {line!r}"
    assert endpoint.requests == []
    assert {path: path.read_bytes() for path in out.rglob("*") if path.is_file() and path.name != ".lock"} == \
        {path: data for path, data in before.items() if path.name != ".lock"}  # nothing repaired that was not safe
