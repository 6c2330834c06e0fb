"""What ``memevo eval`` loads before its first request, the lazily loaded command group, and the plot process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memevo.core.errors import RunFailedError
from memevo.environments.metrics import Scores, score_episodes
from memevo.environments.plot_process import CHILD_NICENESS, PlotProcess
from memevo.environments.runner import EpisodeConfig, run_episode
from memevo.evolve.cli.main import COMMANDS, app
from tests.doubles.scripted_agents import KeywordMemoryAgent, ScriptedSimulator, make_item

NOT_BEFORE_THE_FIRST_REQUEST = ("matplotlib", "memevo.environments.plots", "memevo.evolve.cli.commands",
                                "memevo.evolve.config", "memevo.environments.amemgym.synth.generator",
                                "memevo.agents.llm.local_server", "json_repair", "dspy", "mlflow", "optuna",
                                "yaml",  # a YAML agent config imports it when read; AMemGym's are JSON
                                "tqdm")  # imported when a bar is drawn (stderr a terminal) or a line logged


def test_eval_start_up_loads_only_what_its_run_needs() -> None:
    """The eval command's module, the HTTP stack, the template simulator and the native agent: nothing of
    the other commands, the plots (a child process draws them) or the embedded server."""
    code = ("import sys\nfrom memevo.evolve.cli.main import load_command\nload_command('eval')\n"
            "import memevo.agents.llm.hub, memevo.environments.amemgym.simulators.template\n"
            "from memevo.agents.registry import agent_class\nagent_class('native')\n"
            "print('\\n'.join(sys.modules))")
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
                 .stdout.split())
    assert "memevo.environments.eval_cli" in loaded and "memevo.agents.llm.transport" in loaded
    assert not [name for name in loaded if name.split(".")[0] in NOT_BEFORE_THE_FIRST_REQUEST
                or name in NOT_BEFORE_THE_FIRST_REQUEST]


def test_root_help_lists_every_command_in_order_and_each_loads() -> None:
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0, result.output
    positions = [result.output.index(f" {name} ") for name in COMMANDS]
    assert positions == sorted(positions)
    for name in COMMANDS:
        command = CliRunner().invoke(app, [name, "--help"])
        assert command.exit_code == 0 and "--install-completion" not in command.output, command.output
    unknown = CliRunner().invoke(app, ["no-such-command"])
    assert unknown.exit_code == 2 and "No such command" in unknown.output


async def _scores():  # type: ignore[no-untyped-def]
    item = make_item(n_periods=2)
    episode = await run_episode(KeywordMemoryAgent(item), item, ScriptedSimulator(), EpisodeConfig())
    return score_episodes([episode], [item])


async def test_plot_process_draws_the_plot_it_is_sent(tmp_path: Path) -> None:
    with PlotProcess() as plot:
        plot.prepare(2, upper_bound=False, title="keyword: scores per period")
        plot.draw(await _scores(), tmp_path, "keyword: scores per period")
        path = plot.wait()
    assert path == tmp_path / "periods.png" and path.read_bytes()[:4] == b"\x89PNG"


def test_plot_process_runs_below_the_runs_priority_from_its_start() -> None:
    """Its interpreter start and imports fall in the run's start: it is niced before it runs any of them, not once
    its own code gets to it (~0.1 s later)."""
    with PlotProcess() as plot:
        niceness = os.getpriority(os.PRIO_PROCESS, plot._child.pid)
    assert niceness == min(os.getpriority(os.PRIO_PROCESS, 0) + CHILD_NICENESS, 19)


def _pixels(path: Path) -> tuple[tuple[int, int], bytes]:
    from PIL import Image

    with Image.open(path) as image:
        return image.size, image.tobytes()


def _with_memory(scores: Scores, memory: list[float | None]) -> Scores:
    """``scores`` as if an upper bound of 0.9 had been computed, with these (pooled) memory scores per period."""
    periods = [period.model_copy(update={"upper_bound": 0.9, "memory_score": value, "pooled_memory_score": value})
               for period, value in zip(scores.per_period, memory, strict=True)]
    return scores.model_copy(update={"upper_bound": 0.9, "per_period": periods})


async def test_a_figure_prepared_before_the_scores_draws_what_a_fresh_one_draws(tmp_path: Path) -> None:
    """The plot process builds the figure from a guessed layout while the run goes on: filled with the scores
    it must give the very pixels of a figure built for them, and a guess the scores do not fit is not used."""
    from memevo.environments.plots import PeriodsFigure, PeriodsLayout, plot_periods

    plain = await _scores()
    cases = {"no upper bound": (plain, True), "memory in [0, 1]": (_with_memory(plain, [0.25, 0.75]), True),
             "memory above 1": (_with_memory(plain, [0.5, 1.5]), False),
             "a period without memory score": (_with_memory(plain, [None, 0.5]), False)}
    for name, (scores, fits) in cases.items():
        prepared = PeriodsFigure(PeriodsLayout.expected(2, scores.upper_bound is not None, "keyword"))
        assert (prepared.layout == PeriodsLayout.of(scores, "keyword")) is fits, name
        fresh = plot_periods(scores, tmp_path, title="keyword", filename=f"{name}-fresh.png")
        if fits:
            assert _pixels(prepared.save(scores, tmp_path, f"{name}-prepared.png")) == _pixels(fresh), name
        else:
            with pytest.raises(ValueError, match="do not fit"):
                prepared.save(scores, tmp_path, f"{name}-prepared.png")
    with PlotProcess() as plot:  # told the wrong number of periods: the child draws the scores' own layout
        plot.prepare(5, upper_bound=False, title="keyword")
        plot.draw(plain, tmp_path / "guessed wrong", "keyword")
        path = plot.wait()
    assert _pixels(path) == _pixels(tmp_path / "no upper bound-fresh.png")


async def test_a_plot_that_cannot_be_written_is_a_run_failure_naming_it(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder", encoding="utf-8")
    with PlotProcess() as plot:
        plot.draw(await _scores(), blocked, "title")
        with pytest.raises(RunFailedError, match="per-period plot could not be drawn"):
            plot.wait()


def test_a_plot_process_never_asked_or_left_by_an_error_ends_with_the_run() -> None:
    started = time.perf_counter()
    with PlotProcess() as idle:
        pass
    assert idle.exit_code is not None  # nothing to draw: ended, not waited for while it imports matplotlib
    assert time.perf_counter() - started < 0.5
    with pytest.raises(KeyboardInterrupt), PlotProcess() as interrupted:
        raise KeyboardInterrupt
    assert interrupted.exit_code is not None

