"""What the terminal says during an evolution: each candidate's prompt change beside Optuna's draw, users by short
ids, and libraries' warnings in the run's log with one memevo line for the one a user can act on."""

from __future__ import annotations

import logging
import re
import sys
import warnings
from pathlib import Path

import pytest
from dspy.utils.logging_utils import configure_dspy_loggers

from memevo.agents.policy import MemoryPolicy
from memevo.core.library_log import RUN_LOG, WARNINGS_LOGGER, LibraryLog, current
from memevo.environments.amemgym.data.io import save_items
from memevo.environments.progress import configure_terminal
from memevo.evolve.candidates import Candidate
from memevo.evolve.presentation.candidate_lines import candidate_line
from tests.doubles.category_backend import CategoryBackend, category_world
from tests.doubles.truncating_backend import LIBRARY_LOG_RECORD, LIBRARY_WARNING, TruncatingBackendDouble
from tests.evolve.test_evolve_loop import evolve

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")

PARENT = Candidate(policy=MemoryPolicy(kind="awi", update_every=2, short_term=4, prompts={"write_prompt": "old"}))
UUIDS = [f"{head}-4000-8000-00000000000{user}" for user, head in enumerate(
    ["3f2a9b1c-0000", "3f2a9b1c-7777", "9d8e7f60-0000", "a1b2c3d4-0000", "b5c6d7e8-0000", "c9d0e1f2-0000"])]
SHORT = {"3f2a9b1c-0", "3f2a9b1c-7", "9d8e7f60", "a1b2c3d4", "b5c6d7e8", "c9d0e1f2"}
"""The first two share their first 8 characters."""


def _child(index: int, **changes: object) -> Candidate:
    return Candidate(policy=PARENT.policy.model_copy(update=changes), parent_id=PARENT.id, generation=1, index=index,
                     origin="proposal" if "prompts" in changes else "tuning", trial_number=7 + index,
                     proposer="reflection" if "prompts" in changes else None)


def test_a_candidate_line_names_its_rewrite_and_marks_draws_equal_to_the_parent() -> None:
    rewrite = _child(0, prompts={"write_prompt": "new", "memory_types": "- pets"}, short_term=2)
    line = candidate_line(rewrite, PARENT, ("short_term", "update_every"))
    assert line == (f"gen 1 {rewrite.label}: memory_types, write_prompt rewritten by reflection; Optuna trial 7 drew "
                    "short_term=2 update_every=2 (= parent)")
    tuning = _child(1, update_every=4)
    assert candidate_line(tuning, PARENT, ("update_every",)) == (
        f"gen 1 {tuning.label}: hyperparameters only; Optuna trial 8 drew update_every=4")
    assert candidate_line(tuning, PARENT, ()).endswith("hyperparameters only; no hyperparameter is tuned")


def test_the_terminal_lists_each_candidate_with_its_draw_and_users_by_short_ids(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    world = [item.model_copy(update={"id": uuid}) for item, uuid in zip(category_world(6, 3), UUIDS, strict=True)]
    save_items(world, tmp_path / "data.json")
    caplog.set_level(logging.INFO, logger="memevo.evolve")
    result, _ = evolve(tmp_path, "lines", CategoryBackend(world), budget={"generations": 1, "candidates": 2},
                       hyperparameters={"update_every": {"choices": [1, 2]}})
    plan_line = next(index for index, line in enumerate(caplog.messages) if "candidate(s) (" in line)
    lines = caplog.messages[plan_line + 1:plan_line + 3]
    assert all(re.fullmatch(r"gen 1 g1c\d-\w{8}: (memory_types rewritten by \w+|hyperparameters only); "
                            r"Optuna trial \d+ drew update_every=[12]( \(= parent\))?", line) for line in lines), lines
    users = [line.split(" user ")[1].split(":")[0] for line in caplog.messages if re.search(" (train|val) user ", line)]
    assert users and set(users) <= SHORT
    assert result.history[-1].generation == 1


def test_library_warnings_go_to_the_run_log_with_one_memevo_line(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    configure_terminal()
    configure_dspy_loggers("dspy")  # as when DSPy is imported mid-run: its own stderr handler, at INFO
    world = category_world(6, 3)
    save_items(world, tmp_path / "data.json")
    evolve(tmp_path, "cut", TruncatingBackendDouble(world), budget={"generations": 1, "candidates": 1})
    err = capsys.readouterr().err
    log = (tmp_path / "cut" / RUN_LOG).read_text()
    for said in ("response was truncated", LIBRARY_WARNING, LIBRARY_LOG_RECORD):
        assert said in log and said not in err  # (pytest itself records Python's warnings outside a run)
    (cut,) = [line for line in err.splitlines() if "reply was cut at its token cap" in line]
    assert "gen 1: the proposer's reply was cut at its token cap (llm.proposer.max_tokens=512) " in cut
    assert str(tmp_path / "cut" / RUN_LOG) in cut
    assert "warning(s) from libraries (DSPy, LiteLLM, Optuna, MLflow, httpx) are in" in err
    assert current() is None


def test_a_closed_library_log_gives_the_loggers_back(tmp_path: Path) -> None:
    logger = logging.getLogger("optuna")
    before = (logger.level, logger.propagate, list(logger.handlers))
    with LibraryLog(tmp_path / RUN_LOG) as routed:
        logging.getLogger("optuna.study").warning("trial pruned oddly")
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.warn("an ExperimentalWarning-like notice", UserWarning, stacklevel=1)
        assert routed.count() == 2
    assert (logger.level, logger.propagate, list(logger.handlers)) == before
    assert logging.getLogger(WARNINGS_LOGGER).handlers == [] or current() is None
    text = (tmp_path / RUN_LOG).read_text()
    assert "trial pruned oddly" in text and "an ExperimentalWarning-like notice" in text


def test_a_library_imported_mid_run_with_its_own_stderr_handler_is_routed_too(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    package = tmp_path / "handler_installing_double"
    package.mkdir()
    (package / "__init__.py").write_text(  # as DSPy, LiteLLM and MLflow do when imported
        "import logging, sys\nlogging.getLogger('optuna').addHandler(logging.StreamHandler(sys.stderr))\n"
        "from handler_installing_double import part\n")
    (package / "part.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(logging.getLogger("optuna"), "handlers", list(logging.getLogger("optuna").handlers))
    with LibraryLog(tmp_path / RUN_LOG, reroute_after=frozenset({"handler_installing_double"})):
        import handler_installing_double  # noqa: F401 - imported for its side effect

        assert handler_installing_double.part.VALUE == 1
        logging.getLogger("optuna.samplers").warning("said after the import")
    assert "said after the import" not in capsys.readouterr().err
    assert "said after the import" in (tmp_path / RUN_LOG).read_text()
    logging.getLogger("optuna.samplers").warning("said after the run")  # the package's handler is back
    assert "said after the run" in capsys.readouterr().err
    monkeypatch.delitem(sys.modules, "handler_installing_double")
    monkeypatch.delitem(sys.modules, "handler_installing_double.part")
