"""What an evolution tells MLflow and Optuna, as plain values: metrics, tags, texts, attributes, datasets.

Pure functions only (no store is opened here), so each payload is testable on its own and the writer
(``evolve/tracking``) stays a thin layer of client calls. The choices they encode:

- the parent run's headline is a *running* best (the kept candidate's validation score), next to the
  generation's own best, so the chart shows progress instead of the last generation's luck;
- the kept candidate of each generation and the final best carry tags, so a filter finds them;
- the diff is markdown (MLflow previews ``.md``, not ``.patch``), compares against the texts the seed
  really used (a component left at its default is the default text, not empty) and lists
  hyperparameter changes too;
- the experiment says what it holds and opens on its runs (an evolution logs runs, not traces).
"""

from __future__ import annotations

import difflib
import json
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from memevo.agents.base import ComponentSpec
from memevo.agents.llm.accounting import UsageReport
from memevo.agents.policy import MemoryPolicy
from memevo.core.lazy_model import LazyModel

if TYPE_CHECKING:
    import pandas as pd

KEPT_TAG = "memevo.kept"
"""On a candidate run: "true" when its generation kept it (it beat the parent on validation)."""
BEST_TAG = "memevo.best"
"""On the final best candidate's run(s): "true"."""
ROLE_TAG = "memevo.role"
"""On every run: "evolution", "generation" or "candidate", so a filter can separate them."""
DECISION_TAG = "memevo.decision"
"""On a candidate run: what its generation did with it and why (``kept``, ``rejected: validation 0.410 vs parent
0.450``, ``pruned: ...``), also the first line of the run's description."""
OBJECTIVE_PREFIX = "objective/"
"""The objective's figures on the evolution and generation runs (the running best, a generation's best, the seed's
and the best's validation score). MLflow charts metrics in sections by the prefix before ``/``, prefixes in
alphabetical order and unprefixed metrics last: this one sorts first, so the objective opens the charts."""
COUNTS_PREFIX = "search/"
"""A generation's counts (candidates, accepted, pruned, proposals): the second section."""
COST_PREFIX = "spend/"
"""Calls, tokens and dollars: the third section, apart from the scores."""
RUNNING_BEST = f"{OBJECTIVE_PREFIX}running_best_val_score"
DIFF_ARTIFACT = "diff.md"
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
EXPERIMENT_NOTE_TAG = "mlflow.note.content"
HYPERPARAMETERS = ("update_every", "short_term", "top_k")


class GenerationOutcomeLike(Protocol):
    """What a generation's stored outcome provides (``GenerationOutcome``)."""

    generation: int
    train: dict[str, float]
    val: dict[str, float]
    parent_val: float


SCORE_PLOT_FILE = "score_per_generation.png"
"""The evolution's score-per-generation plot in the run folder, and its MLflow artifact."""


class GenerationPoint(LazyModel):
    """One generation's scores, as plotted and logged."""

    generation: int
    best_train: float | None
    """Best training score among the generation's candidates (None when it evaluated none)."""
    best_val: float | None
    """Best validation score among them (None when every candidate was pruned before validation)."""
    kept_val: float
    """Validation score of the candidate kept after this generation: the running best."""


def generation_points(history: Iterable[GenerationOutcomeLike]) -> list[GenerationPoint]:
    return [
        GenerationPoint(generation=outcome.generation, best_train=max(outcome.train.values(), default=None),
                        best_val=max(outcome.val.values(), default=None), kept_val=outcome.parent_val)
        for outcome in history
    ]


def generation_metrics(point: GenerationPoint) -> dict[str, float]:
    """Metrics for the generation and parent runs at ``step=generation``."""
    metrics = {"running_best_val_score": point.kept_val}
    if point.best_val is not None:
        metrics["generation_best_val_score"] = point.best_val
    if point.best_train is not None:
        metrics["generation_best_train_score"] = point.best_train
    return {f"{OBJECTIVE_PREFIX}{name}": value for name, value in metrics.items()}


def objective_summary(points: Sequence[GenerationPoint]) -> dict[str, float]:
    """Initial (seed) and final (best) validation objective for the parent run."""
    if not points:
        return {}
    first, last = points[0].kept_val, points[-1].kept_val
    return {f"{OBJECTIVE_PREFIX}initial_val_score": first, f"{OBJECTIVE_PREFIX}final_val_score": last,
            f"{OBJECTIVE_PREFIX}val_score_gain": last - first}


def candidate_tags(candidate_id: str, *, kept_id: str, generation: int, origin: str,
                   decision: str | None = None) -> dict[str, str]:
    tags = {ROLE_TAG: "candidate", KEPT_TAG: str(candidate_id == kept_id).lower(),
            "memevo.candidate_id": candidate_id, "memevo.generation": str(generation), "memevo.origin": origin}
    return tags | ({DECISION_TAG: decision} if decision else {})


def candidate_note(decision: str, *, label: str, parent_label: str, changes: Sequence[str]) -> dict[str, str]:
    """The run's description (MLflow's overview shows it first): the decision, then what the candidate changed."""
    lines = [f"**{decision}**", ""]
    if label != parent_label:
        lines.append(f"Proposed from {parent_label}; `{DIFF_ARTIFACT}` shows the change against it.")
    if changes:
        lines += ["", "Changes:", *(f"- {change}" for change in changes)]
    return {EXPERIMENT_NOTE_TAG: "\n".join(lines)}


def cost_metrics(usage: UsageReport) -> dict[str, float]:
    """Calls, tokens and dollars per role so far, under ``COST_PREFIX``. A role with calls no price is known for
    has no dollar figure (0 would read as free): ``cost/unpriced_calls_<role>`` counts them instead."""
    metrics: dict[str, float] = {}
    for role, spent in usage.by_role.items():
        metrics[f"{COST_PREFIX}calls_{role}"] = spent.calls
        metrics[f"{COST_PREFIX}tokens_{role}"] = spent.prompt_tokens + spent.completion_tokens
        if spent.unpriced_calls:
            metrics[f"{COST_PREFIX}unpriced_calls_{role}"] = spent.unpriced_calls
        else:
            metrics[f"{COST_PREFIX}dollars_{role}"] = spent.dollars
    return metrics


def cancelled_metric(usage: UsageReport) -> dict[str, float]:
    """Requests the run itself cancelled (a pruned or stopped play: sent, perhaps served and billed, answer and cost
    not known), apart from those in flight at a kill; 0 when none was."""
    return {f"{COST_PREFIX}cancelled_calls": float(usage.total().cancelled_calls)}


def generation_tags(*, kept_id: str, kept_label: str, improved: bool) -> dict[str, str]:
    """The generation run names the candidate it kept (its run name is ``kept_label``)."""
    return {ROLE_TAG: "generation", "memevo.kept_candidate": kept_label, "memevo.kept_candidate_id": kept_id,
            "memevo.improved": str(improved).lower()}


def parent_tags(*, best_id: str, best_label: str) -> dict[str, str]:
    return {ROLE_TAG: "evolution", "memevo.best_candidate": best_label, "memevo.best_candidate_id": best_id}


def generation_run_name(generation: int, *, kept_label: str, improved: bool) -> str:
    """``generation-1 (kept g1c0-a2b3211f)``: the run list then says which candidate each generation kept."""
    if generation == 0:
        return f"generation-0 (seed {kept_label})"
    return f"generation-{generation} ({'kept' if improved else 'no change, kept'} {kept_label})"


def resolved_prompts(policy: MemoryPolicy, components: Iterable[ComponentSpec]) -> dict[str, str]:
    """The text of every component as the agent uses it: the policy's own, or the kind's default."""
    return {spec.name: policy.prompts.get(spec.name, spec.default) for spec in components}


def hyperparameter_changes(before: MemoryPolicy, after: MemoryPolicy) -> dict[str, tuple[int, int]]:
    return {name: (getattr(before, name), getattr(after, name)) for name in HYPERPARAMETERS
            if getattr(before, name) != getattr(after, name)}


def candidate_diff(before: MemoryPolicy, after: MemoryPolicy, components: Sequence[ComponentSpec], *,
                   before_name: str, after_name: str, level: int = 1) -> str:
    """Markdown: the hyperparameters that changed and a unified diff of every changed prompt component.

    ``level`` is the heading level of the title (components one below), so the text can sit inside a report.
    """
    lines = [f"{'#' * level} {after_name} against {before_name}", ""]
    changes = hyperparameter_changes(before, after)
    if changes:
        lines += ["| hyperparameter | before | after |", "|---|---|---|"]
        lines += [f"| {name} | {old} | {new} |" for name, (old, new) in changes.items()]
    else:
        lines.append("Hyperparameters: unchanged.")
    old_texts, new_texts = resolved_prompts(before, components), resolved_prompts(after, components)
    changed = [name for name in old_texts if old_texts[name] != new_texts[name]]
    for name in changed:
        diff = difflib.unified_diff(old_texts[name].splitlines(), new_texts[name].splitlines(), lineterm="",
                                    fromfile=f"{before_name}/{name}", tofile=f"{after_name}/{name}")
        lines += ["", f"{'#' * (level + 1)} {name}", "", "```diff", *diff, "```"]
    if not changed:
        lines += ["", "Prompts: unchanged."]
    return "\n".join(lines) + "\n"


def prompt_version_tags(*, candidate_id: str, generation: int, scores: Mapping[str, float | None],
                        run_id: str | None) -> dict[str, str]:
    """Tags for a registered prompt version: which candidate, and its scores (``val_score``, ``test_accuracy``...)."""
    tags = {"candidate_id": candidate_id, "generation": str(generation)}
    tags |= {name: f"{value:.4f}" for name, value in scores.items() if value is not None}
    if run_id:
        tags["mlflow_run_id"] = run_id
    return tags


def minibatch_param(minibatch: int | None, *, order: str) -> str:
    """``strategy.minibatch`` as the parent run's param. None reads as what it means under the order: a proposal
    is checked on all train users (validation first), or meets no gate before them (train first)."""
    if minibatch is not None:
        return str(minibatch)
    return "all" if order == "validation_first" else "none"


def experiment_tags(*, name: str, protocol: str, components: Sequence[str], feedback_mode: str) -> dict[str, str]:
    """An experiment description (shown on the experiment page) and the kind that opens it on its runs."""
    evolving = ", ".join(components) or "no prompt (hyperparameters only)"
    note = "\n".join([
        f"memevo evolution **{name}** ({protocol}); evolving: {evolving}; feedback: {feedback_mode}.",
        "",
        "- One parent run per evolution; under it one run per generation, under that one run per candidate.",
        (f"- `{RUNNING_BEST}` is the kept candidate's validation score; tag `{KEPT_TAG}` marks each "
        f"generation's kept candidate, `{BEST_TAG}` the final best."),
        (f"- A candidate's `val_objective` and `train_objective` are the scores the loop compared; tag "
         f"`{DECISION_TAG}` (and the run's description) says what its generation did with it and why."),
        (f"- Calls, tokens and dollars are charted under `{COST_PREFIX}`, a generation's counts under "
         f"`{COUNTS_PREFIX}`; a model without a known price has no dollar figure but "
         f"`{COST_PREFIX}unpriced_calls_<role>`; the parent's `{COST_PREFIX}cancelled_calls` counts requests the "
         "run cancelled itself (their cost is not known)."),
        (f"- Each candidate run has `{DIFF_ARTIFACT}` (against its parent), its prompts and `policy.json`; "
        "accepted prompts are in the Prompts tab (alias `best`), where *Compare* shows the versions side by side."),
        "- Memory score: 0 = random guessing, 1 = the model's perfect-information upper bound.",
    ])
    return {EXPERIMENT_NOTE_TAG: note, EXPERIMENT_KIND_TAG: "custom_model_development",
            PRIMARY_METRIC_TAG: RUNNING_BEST} | runs_views()


RUNS_VIEWS = {"memevo-runs": "runs", "memevo-candidates": "candidates by generation"}
"""The shared views of the runs table ``memevo ui`` opens (``?viewStateShareKey=<key>``), with what they show: the
evolution's runs nested (parent, generations, candidates), and every candidate grouped by its generation."""
VIEW_TAG_PREFIX = "mlflow.sharedViewState."
"""The experiment tags MLflow's UI reads a shared view from (the tags its *Share* button writes)."""
PRIMARY_METRIC_TAG = "mlflow.experiment.primaryMetric.name"
"""The experiment's primary metric, the one MLflow's charts start from."""
RUNS_COLUMNS = (f"metrics.`{RUNNING_BEST}`", "metrics.`val_objective`", "metrics.`train_objective`",
                f"tags.`{DECISION_TAG}`")
"""The runs table's columns, objective first: a generation's and the evolution's running best, a candidate's
validation and train objective and what was done with it; the spend is on the runs' charts under ``cost/``."""


def runs_views() -> dict[str, str]:
    """The experiment tags holding ``RUNS_VIEWS`` (MLflow's shared-view JSON): only ``RUNS_COLUMNS``, in that order
    and wide enough to read a decision, instead of MLflow's default columns, which show no metric at all."""
    columns: dict[str, object] = {
        "selectedColumns": list(RUNS_COLUMNS), "columnOrder": ["tags.`mlflow.runName`", *RUNS_COLUMNS],
        "columnWidths": {f"tags.`{DECISION_TAG}`": 440},
    }
    by_generation: dict[str, object] = {
        "searchFilter": f"tags.`{ROLE_TAG}` = 'candidate'",
        "groupBy": {"aggregateFunction": "max", "groupByKeys": [{"mode": "tag", "groupByData": "memevo.generation"}]},
    }
    views: dict[str, dict[str, object]] = dict(zip(RUNS_VIEWS, ({"searchFilter": ""}, by_generation), strict=True))
    return {f"{VIEW_TAG_PREFIX}{key}": json.dumps(view | columns) for key, view in views.items()}


def split_table(split: Mapping[str, Sequence[str]]) -> pd.DataFrame:
    """One row per user: which split it belongs to (the data a run was selected and tested on)."""
    import pandas as pd  # loaded with the tracking store, off the run's start

    rows = [{"user_id": user, "split": name} for name, users in split.items() for user in users]
    return pd.DataFrame(rows, columns=["user_id", "split"])


def split_dataset_input(split: Mapping[str, Sequence[str]], *, name: str, source: str, digest: str | None = None) -> Any:
    """The user split as an ``mlflow.data`` dataset input (context "split"), for ``MlflowClient.log_inputs``.

    ``digest`` is memevo's data hash, which identifies the users' content, not just their ids.
    """
    from mlflow.data.pandas_dataset import from_pandas
    from mlflow.entities import DatasetInput, InputTag
    from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT

    with warnings.catch_warnings():  # a local path matches two equivalent source types; MLflow picks one
        warnings.filterwarnings("ignore", message=".*can be interpreted in multiple ways")
        dataset = from_pandas(split_table(split), source=source, name=name, digest=digest)
    # the conversion MLflow's own mlflow.log_input performs; the client API takes the entity
    return DatasetInput(dataset=dataset._to_mlflow_entity(), tags=[InputTag(MLFLOW_DATASET_CONTEXT, "split")])
