"""``memevo eval``, ``memevo evolve`` and the Python API use the same user simulator when none is asked for, so an
evolved prompt rescored by ``memevo eval`` meets the users its test scores came from."""

from __future__ import annotations

import inspect
import re

from typer.testing import CliRunner

from memevo.environments.eval_run import EvalRequest
from memevo.evolve.api import evaluate
from memevo.evolve.cli.main import app
from memevo.evolve.config import EpisodeSettings


def test_eval_evolve_and_the_api_default_to_the_same_simulator() -> None:
    api_default = inspect.signature(evaluate).parameters["simulator"].default
    assert EvalRequest.model_fields["simulator"].default == EpisodeSettings().simulator == api_default == "template"

    shown = CliRunner().invoke(app, ["eval", "--help"], terminal_width=200)
    assert shown.exit_code == 0, shown.output
    plain = re.sub(r"\x1b\[[0-9;]*m|[\s│]+", " ", shown.output)
    assert "--simulator" in plain and "[default: template]" in plain, plain
