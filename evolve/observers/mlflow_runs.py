"""MLflow as an observer: a parent run per evolution, a child per generation, a grandchild per candidate; an in-episode
evolution (AMemGym's protocol) is one parent run with both arms' per-period scores and every user's steps.

Every write goes through ``Tracker`` (``memevo.evolve.tracking.store``), which skips what is done and repeats what a
kill interrupted, so a resumed run that emits the same events logs the same rows, none twice. Importing MLflow and
opening its store take seconds: they run in the start-up thread once the first requests are in flight.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memevo.evolve.candidate_costs import cost_metrics
from memevo.evolve.cross_test import cross_test_metrics
from memevo.evolve.events import (
    Event,
    GenerationEnded,
    InEpisodeEnded,
    Observer,
    ParentTrainCompleted,
    RunContext,
    RunEnded,
)
from memevo.evolve.tracking.entries import (
    candidate_entry,
    completed_train_entry,
    final_metrics,
    generation_counts,
    in_episode_period_metrics,
    memory_tags,
    outcome_note,
    test_figures,
)
from memevo.evolve.tracking.payloads import (
    SCORE_PLOT_FILE,
    experiment_tags,
    generation_metrics,
    generation_points,
    generation_run_name,
    generation_tags,
    minibatch_param,
    objective_summary,
    parent_tags,
    prompt_version_tags,
    split_dataset_input,
)
from memevo.evolve.tracking.stores import git_commit

if TYPE_CHECKING:
    from memevo.evolve.records import EvolutionResult
    from memevo.evolve.tracking.store import Tracker


def open_tracker(run_dir: Path, *, uri: str | None, experiment: str, experiment_tags: dict[str, str]) -> Tracker:
    """The run's ``Tracker``; MLflow (and pandas, for the split's dataset) load here, in the tracking thread."""
    from memevo.evolve.tracking.store import Tracker

    return Tracker(run_dir=run_dir, uri=uri, experiment=experiment, experiment_tags=experiment_tags)


class MlflowObserver(Observer):
    """Logs each generation as it ends and the run's result when it ends."""

    def __init__(self, context: RunContext) -> None:
        self.context = context
        config = context.config
        self._tracker = context.start_later.defer(partial(
            open_tracker, context.run_dir, uri=config.tracking.uri, experiment=config.tracking.experiment or config.name,
            experiment_tags=experiment_tags(name=config.name, protocol=config.protocol, components=config.components,
                                            feedback_mode=config.feedback.mode.value)))

    @property
    def tracker(self) -> Tracker:
        """The first use waits for MLflow to load (and raises what it raised). Nothing is logged until then, and
        everything logged comes from the run folder's records, so a run killed meanwhile loses nothing tracked."""
        return self._tracker.result()

    def links(self, generation: int, label: str) -> dict[str, str]:
        run_id = self.tracker.candidate_run_id(generation, label)
        return {"mlflow_run_id": run_id} if run_id else {}

    def notify(self, event: Event) -> None:
        match event:
            case GenerationEnded():
                self._generation(event)
            case ParentTrainCompleted(parent, record):
                tracker = self.tracker
                metrics, artifacts = completed_train_entry(record, self.context.figure_key)
                tracker.update_candidate(parent.generation, parent.label, metrics | cost_metrics(record.cost), artifacts,
                                         key="completed_train")
            case RunEnded():
                self._run_ended(event)
            case InEpisodeEnded(result):
                self._in_episode_ended(result)

    def start(self) -> None:
        """Open (or reopen) the parent run with this evolution's params, config and user split as its input."""
        tracker = self.tracker  # first: the dataset input imports MLflow, which the tracking thread may be importing
        config, split = self.context.config, self.context.split
        dataset = split_dataset_input({"train": split.train, "val": split.val, "test": split.test}, name=f"{config.name}-users",
                                      source=config.data.path or "synth", digest=self.context.data_hash)
        tracker.start(config.name, self.params(), config.hash_payload(), dataset)

    def params(self) -> dict[str, Any]:
        """The parent run's params: what defines this evolution."""
        config, seed, split = self.context.config, self.context.seed, self.context.split
        return {
            "name": config.name, "environment": config.environment, "protocol": config.protocol,
            "seed_policy_id": seed.id,
            "agent_kind": seed.policy.kind, "agent_model": seed.policy.llm.model,
            "proposer_model": config.llm.proposer.model, "feedback_mode": config.feedback.mode.value,
            "objective": self.context.objective_name, "proposers": ",".join(config.strategy.proposers),
            "parents": config.strategy.parents, "acceptance": config.strategy.acceptance,
            "order": config.strategy.order,
            "minibatch": minibatch_param(config.strategy.minibatch, order=config.strategy.order),
            "components": ",".join(config.components), "split_seed": config.split.seed,
            "optuna_seed": config.optuna.seed, "data_hash": self.context.data_hash,
            "n_train": len(split.train), "n_val": len(split.val), "n_test": len(split.test),
            "git_commit": git_commit(Path(__file__).parent) or "unknown",
        }

    def _generation(self, event: GenerationEnded) -> None:
        """The generation's runs, then its kept candidate's prompt versions: each write is skipped when done
        and repeatable when a kill interrupted it (``Tracker``), so nothing is left out or written twice."""
        self.start()
        context, outcome, kept = self.context, event.outcome, event.kept
        candidates = [*(candidate for candidate, _ in event.ran), *event.never_run]
        entries = [
            candidate_entry(context.spec, candidate, event.parent_of(candidate), event.records[candidate.id],
                            event.feedback, outcome=outcome, decision=event.decisions.of(candidate.id).text,
                            figure=context.figure_key)
            for candidate in candidates
        ]
        for entry, candidate in zip(entries, candidates, strict=True):
            entry["metrics"] |= cost_metrics(event.records[candidate.id].cost)
        (point,) = generation_points([outcome])
        self.tracker.log_generation(
            outcome.generation, generation_counts(outcome, len(event.ran), event.usage) | generation_metrics(point),
            entries, run_name=generation_run_name(outcome.generation, kept_label=kept.label, improved=event.improved),
            tags=generation_tags(kept_id=kept.id, kept_label=kept.label, improved=event.improved),
        )
        if outcome.accepted and context.config.tracking.register_prompts:
            prompts = {name: kept.policy.prompts.get(name, context.spec.component(name).default)
                       for name in context.config.components}
            run_id = self.tracker.candidate_run_id(kept.generation, kept.label)
            tags = prompt_version_tags(candidate_id=kept.id, generation=kept.generation,
                                       scores={f"val_{context.objective_name}": outcome.parent_val}, run_id=run_id)
            self.tracker.register_prompts(context.config.name, kept.id, prompts, best=True, tags=tags, run_id=run_id)

    def _run_ended(self, event: RunEnded) -> None:
        self.start()
        result, best = event.result, event.result.best
        for scored in {result.seed.id: result.seed, best.id: best}.values():  # their cost now includes the test
            if self.tracker.candidate_run_id(scored.generation, scored.label):
                self.tracker.update_candidate(scored.generation, scored.label, cost_metrics(event.costs[scored.id]), {},
                                              key="tested_cost")
        plot = self.context.run_dir / SCORE_PLOT_FILE
        extra = {} if event.cross is None else cross_test_metrics(event.cross)
        metrics = final_metrics(result, self.context.figure_key) | objective_summary(generation_points(result.history))
        self.tracker.finish(metrics | extra,
                            {"result.json": result.model_dump_json(indent=2),
                             "best_policy.json": best.policy.model_dump_json(indent=2)},
                            step=len(result.history),
                            tags=parent_tags(best_id=best.id, best_label=best.label) | memory_tags(result)
                            | outcome_note(result),
                            best_run_id=self.tracker.candidate_run_id(best.generation, best.label),
                            figures=(plot,) if plot.exists() else ())

    def _in_episode_ended(self, result: EvolutionResult) -> None:
        """The parent run: both arms' per-period scores (step = period), then the test figures, every user's steps
        and the result. A repeat after a kill stores no second row (``Tracker``)."""
        self.start()
        tracker, figure = self.tracker, self.context.figure_key
        for step, values in in_episode_period_metrics(result, figure):
            tracker.log_metrics(values, step=step)
        steps = sorted((self.context.run_dir / "in_episode").glob("*/period_*.json"))
        artifacts = {f"steps/{path.parent.name}/{path.name}": path.read_text(encoding="utf-8") for path in steps}
        artifacts["result.json"] = result.model_dump_json(indent=2)
        tracker.finish(test_figures(result, figure), artifacts, step=0, tags={}, best_run_id=None)

