"""Per-question scores and their aggregation per category, as the benchmarks report them.

A question that could not be scored (no judge configured, a metric that needs a model memevo does not run)
keeps ``value=None`` and its reason; a category with no scored question says n/a with the reasons, never 0.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from memevo.agents.lazy_model import LazyModel


class QuestionScore(LazyModel):
    item_id: str
    question_id: str
    category: str
    metric: str
    value: float | None
    na_reason: str | None = None
    reply: str = ""


class Cell(LazyModel):
    """The mean of one metric over ``scored`` of ``n`` questions; ``mean`` is None when none was scored."""

    metric: str
    n: int
    scored: int
    mean: float | None
    na_reason: str | None = None

    def text(self) -> str:
        if self.mean is None:
            return f"n/a ({self.na_reason})"
        unscored = f", {self.n - self.scored} unscored" if self.scored < self.n else ""
        return f"{self.mean:.3f} {self.metric} (n={self.scored}{unscored})"


class ScoreTable(LazyModel):
    environment: str
    overall: Cell
    by_category: dict[str, Cell]
    summaries: dict[str, Cell] = {}
    """Further figures a benchmark reports beside the overall mean (LongMemEval's task-averaged accuracy and
    abstention accuracy)."""

    def lines(self) -> list[str]:
        width = max((len(name) for name in (*self.by_category, *self.summaries, "overall")), default=7)
        rows = [f"{'overall'.ljust(width)}  {self.overall.text()}"]
        rows += [f"{name.ljust(width)}  {cell.text()}" for name, cell in self.by_category.items()]
        rows += [f"{name.ljust(width)}  {cell.text()}" for name, cell in self.summaries.items()]
        return [f"{self.environment}:", *("  " + row for row in rows)]


def cell(scores: Iterable[QuestionScore], metric: str) -> Cell:
    chosen = list(scores)
    values = [score.value for score in chosen if score.value is not None]
    if values:
        return Cell(metric=metric, n=len(chosen), scored=len(values), mean=sum(values) / len(values))
    reasons = Counter(score.na_reason or "not scored" for score in chosen)
    reason = "; ".join(f"{text} x{count}" for text, count in reasons.most_common()) or "no questions"
    return Cell(metric=metric, n=len(chosen), scored=0, mean=None, na_reason=reason)


def by_category(environment: str, scores: list[QuestionScore], *, order: Iterable[str] = ()) -> ScoreTable:
    """Overall and per-category means; categories in ``order`` first, then the rest as they appear. The overall
    metric is the questions' own when they share one, else ``mixed``."""
    names = list(dict.fromkeys([*[name for name in order if any(s.category == name for s in scores)],
                                *(score.category for score in scores)]))
    per_category = {name: _category_cell([s for s in scores if s.category == name]) for name in names}
    metrics = {score.metric for score in scores}
    overall = cell(scores, metrics.pop() if len(metrics) == 1 else "mixed")
    return ScoreTable(environment=environment, overall=overall, by_category=per_category)


def mean_of_cells(cells: Iterable[Cell], metric: str) -> Cell:
    """The unweighted mean of categories' means (a task-averaged figure); n/a if any category is n/a."""
    chosen = list(cells)
    missing = [c for c in chosen if c.mean is None]
    if missing or not chosen:
        return Cell(metric=metric, n=sum(c.n for c in chosen), scored=0, mean=None,
                    na_reason="a category has no score" if chosen else "no categories")
    return Cell(metric=metric, n=sum(c.n for c in chosen), scored=sum(c.scored for c in chosen),
                mean=sum(c.mean for c in chosen if c.mean is not None) / len(chosen))


def _category_cell(scores: list[QuestionScore]) -> Cell:
    metrics = {score.metric for score in scores}
    return cell(scores, metrics.pop() if len(metrics) == 1 else "mixed")
