"""A figure already drawn from the same scores is not drawn again, and a rerun waits on no plotting child
(``environments/plot_process.py``)."""

from __future__ import annotations

import time
from pathlib import Path

from memevo.environments.plot_process import PLOT_FILE, PlotProcess, key_path
from memevo.environments.plots import PERIODS_PLOT
from tests.evolve.test_startup import _scores


def test_the_plot_file_is_the_one_the_plots_module_writes() -> None:
    assert PLOT_FILE == PERIODS_PLOT


async def test_a_figure_drawn_from_the_same_scores_is_not_drawn_again(tmp_path: Path) -> None:
    scores = await _scores()
    with PlotProcess() as plot:
        plot.draw(scores, tmp_path, "keyword")
        path = plot.wait()
    drawn = path.stat().st_mtime_ns
    assert key_path(path).exists()
    started = time.perf_counter()
    with PlotProcess(start=False) as again:
        again.draw(scores, tmp_path, "keyword")
        assert again.wait() == path
        assert again.exit_code is None  # no child was started
    assert time.perf_counter() - started < 1.0
    assert path.stat().st_mtime_ns == drawn
    with PlotProcess(start=False) as retitled:  # another request: drawn again, the child started on demand
        retitled.draw(scores, tmp_path, "keyword, again")
        assert retitled.wait() == path
        assert retitled.exit_code == 0
    assert path.stat().st_mtime_ns != drawn

