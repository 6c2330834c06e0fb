"""Strategies in the loop on the category double: the objective, the minibatch gate, Pareto parents,
paired acceptance, merge and delta proposers, each resuming after a kill to the identical result."""

from __future__ import annotations

import csv
import io
import logging
import re
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import optuna
import pytest
from mlflow import MlflowClient

from memevo.agents.policy import MemoryPolicy
from memevo.agents.prompts.awi import MEMORY_TYPES_COMPONENT
from memevo.core.errors import UserInputError
from memevo.environments import progress
from memevo.evolve import proposers
from memevo.evolve.candidates import Candidate
from memevo.evolve.evaluation import CandidateEval
from memevo.evolve.proposers import ProposalContext, ProposerSettings, Variant, make_proposer
from memevo.evolve.records import GenerationPlan, ProposalStats
from memevo.evolve.tracking.store import Tracker
from memevo.evolve.validation import LengthBounds
from tests.doubles.category_backend import CategoryBackend, category_world
from tests.doubles.line_proposers import register_proposer_double
from tests.evolve.test_evolve_loop import SEED_TYPES, CrashingBackend, Killed, _comparable, _served, evolve

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")

ALL_STRATEGIES = {
    "strategy": {
        "proposers": ["reflection", "delta", "merge"],
        "parents": "pareto",
        "acceptance": "paired",
        "confidence": 0.6,
        "minibatch": 1,
        "order": "train_first",
    },
    "episode": {"rounds_init": 1, "rounds_update": 1, "user_concurrency": 1, "candidate_concurrency": 1},
    "budget": {"generations": 3, "candidates": 3},
}


def test_one_objective_reaches_selection_tuner_and_result(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="memevo.evolve")
    result, _ = evolve(tmp_path, "memory", budget={"generations": 1}, objective="amemgym_memory_score")
    assert (f"test AMemGym memory score: seed {result.seed_scores.memory_score:.3f} -> best "
            f"{result.best_scores.memory_score:.3f}") in caplog.text  # the final line names the objective
    assert result.objective == "amemgym_memory_score"
    seed_val = CandidateEval.model_validate_json(
        (tmp_path / "memory" / "evals" / result.seed.id / "val.json").read_text()
    )
    assert seed_val.objective == "amemgym_memory_score"
    cells = [m for user in seed_val.users for m in user.period_memory if m is not None]
    assert result.history[0].val[result.seed.id] == pytest.approx(sum(cells) / len(cells))
    study = optuna.load_study(study_name="test-evolution", storage=f"sqlite:///{tmp_path / 'memory' / 'optuna.db'}")
    assert study.metric_names == ["amemgym_memory_score"]
    seed_trial = study.trials[0]
    assert seed_trial.user_attrs["candidate_id"] == result.seed.id
    assert seed_trial.user_attrs["val_amemgym_memory_score"] == pytest.approx(result.history[0].val[result.seed.id])
    accuracy, _ = evolve(tmp_path, "accuracy", budget={"generations": 1}, objective="accuracy")
    assert accuracy.objective == "accuracy"
    assert f"test accuracy: seed {accuracy.seed_scores.accuracy:.3f} -> best" in caplog.text
    val = CandidateEval.model_validate_json(
        (tmp_path / "accuracy" / "evals" / accuracy.seed.id / "val.json").read_text()
    )
    assert accuracy.history[0].val[accuracy.seed.id] == pytest.approx(sum(u.accuracy for u in val.users) / 2)


def test_minibatch_gate_stops_a_dominated_proposal_before_its_full_evaluation(tmp_path: Path) -> None:
    world = category_world(6, 3)
    options: dict[str, Any] = {
        "budget": {"generations": 1, "candidates": 2},
        "split": {"train": 3, "val": 1, "test": 2},
    }
    gated, gated_backend = evolve(
        tmp_path, "gated", CategoryBackend(world, proposer_mode="forget"),
        strategy={"order": "train_first", "minibatch": 1}, **options
    )
    open_, open_backend = evolve(
        tmp_path, "open", CategoryBackend(world, proposer_mode="forget"), optuna={"pruner": "none"},
        strategy={"order": "train_first", "minibatch": None}, **options
    )
    generation = gated.history[1]
    assert generation.gated and set(generation.gated) == set(generation.train) | set(generation.gated)
    for candidate_id in generation.gated:
        evals = tmp_path / "gated" / "evals" / candidate_id
        assert (evals / "minibatch.json").exists()
        assert not (evals / "train.json").exists() and not (evals / "val.json").exists()
    assert not open_.history[1].gated and open_.history[1].val
    assert len(gated_backend.calls_for("agent")) < len(open_backend.calls_for("agent"))
    assert gated.best.id == gated.seed.id


def test_merge_combines_two_pool_candidates() -> None:
    seed = Candidate(policy=MemoryPolicy(kind="awi", prompts={"memory_types": SEED_TYPES}))
    one = Candidate(
        policy=seed.policy.with_prompts(memory_types=SEED_TYPES + "\n- instrument"), parent_id=seed.id, generation=1
    )
    two = Candidate(
        policy=seed.policy.with_prompts(memory_types=SEED_TYPES + "\n- genre"), parent_id=seed.id, generation=1, index=1
    )
    val = {
        seed.id: {("u", 0): 0.0, ("u", 1): 0.0},
        one.id: {("u", 0): 1.0, ("u", 1): 0.0},
        two.id: {("u", 0): 0.0, ("u", 1): 1.0},
    }

    def context(parent: Candidate, pool: tuple[Candidate, ...]) -> ProposalContext:
        return ProposalContext(
            generation=2,
            parent=parent,
            evidence="",
            components=[MEMORY_TYPES_COMPONENT],
            task="t",
            bounds=LengthBounds(),
            pool=pool,
            val_instances=val,
            lineage={c.id: c for c in (seed, one, two)},
        )

    merge = make_proposer("merge", ProposerSettings(lm=None))
    (variant,), stats = _run(merge.propose(context(one, (seed, one, two)), 2))
    assert variant.prompts["memory_types"] == SEED_TYPES + "\n- instrument\n- genre"
    assert variant.other_parent_id == two.id and stats.accepted == 1
    alone = context(seed, (seed,))
    assert _run(merge.propose(alone, 1))[0] == []


def test_a_merge_asked_for_again_takes_the_next_partner() -> None:
    seed = Candidate(policy=MemoryPolicy(kind="awi", prompts={"memory_types": SEED_TYPES}))
    lines = ("- instrument", "- genre", "- decade")
    one, two, three = (Candidate(policy=seed.policy.with_prompts(memory_types=f"{SEED_TYPES}\n{line}"),
                                 parent_id=seed.id, generation=1, index=index) for index, line in enumerate(lines))
    val = {seed.id: {("u", 0): 0.0, ("u", 1): 0.0, ("u", 2): 0.0},  # wins over the parent one: three 2, two 1
           one.id: {("u", 0): 1.0, ("u", 1): 0.0, ("u", 2): 0.0},
           two.id: {("u", 0): 0.0, ("u", 1): 1.0, ("u", 2): 0.0},
           three.id: {("u", 0): 0.0, ("u", 1): 1.0, ("u", 2): 1.0}}
    context = ProposalContext(generation=2, parent=one, evidence="", components=[MEMORY_TYPES_COMPONENT], task="t",
                              bounds=LengthBounds(), pool=(seed, one, two, three), val_instances=val,
                              lineage={c.id: c for c in (seed, one, two, three)})
    merge = make_proposer("merge", ProposerSettings(lm=None))
    (first,), _ = _run(merge.propose(context, 1))
    (again,), stats = _run(merge.propose(replace(context, first_sample=1), 1))
    assert (first.other_parent_id, again.other_parent_id) == (three.id, two.id) and stats.accepted == 1
    assert again.prompts["memory_types"] == f"{SEED_TYPES}\n- instrument\n- genre"
    assert _run(merge.propose(replace(context, first_sample=2), 1))[0] == []  # no third partner
    assert [v.other_parent_id for v in _run(merge.propose(context, 3))[0]] == [three.id, two.id]
    assert _run(merge.propose(context, 1))[0] == [first]  # the same pool, the same merge


class SampleRecorder:
    """TEST DOUBLE proposer: notes the sample numbers it is asked for and proposes nothing."""

    def __init__(self, name: str) -> None:
        self.name, self.asked = name, []

    async def propose(self, context: ProposalContext, n: int) -> tuple[list[Variant], ProposalStats]:
        self.asked.append(list(context.samples(n)))
        return [], ProposalStats()


def test_proposers_asked_again_continue_from_their_own_samples() -> None:
    first, second = SampleRecorder("first"), SampleRecorder("second")
    context = ProposalContext(generation=1, parent=Candidate(policy=MemoryPolicy(kind="awi")), evidence="",
                              components=[MEMORY_TYPES_COMPONENT], task="t", bounds=LengthBounds())
    drawn: Counter[int] = Counter()
    for wanted in (3, 2, 3):
        _run(proposers.propose_all([first, second], context, wanted, drawn))
    assert first.asked == [[0, 1], [2], [3, 4]] and second.asked == [[0], [1], [2]]  # no sample skipped or repeated


def _run(coroutine: Any) -> Any:
    import asyncio

    return asyncio.run(coroutine)


def test_all_strategies_together_improve_and_record_their_origin(tmp_path: Path) -> None:
    world = category_world(6, 3)
    result, _ = evolve(tmp_path, "all", CategoryBackend(world, proposer_mode="step"), **ALL_STRATEGIES)
    assert result.best_scores.accuracy > result.seed_scores.accuracy
    plans = [
        GenerationPlan.model_validate_json(path.read_text())
        for path in sorted((tmp_path / "all" / "generations").glob("gen_*/plan.json"))
    ]
    proposers = {c.proposer for plan in plans for c in plan.candidates}
    assert {"reflection", "delta"} <= proposers
    merges = [c for plan in plans for c in plan.candidates if c.proposer == "merge"]
    assert all(c.other_parent_id is not None for c in merges)
    assert all(set(o.accepted_ids) <= set(o.val) for o in result.history[1:])


def test_validation_first_spends_train_episodes_only_on_the_candidate_it_keeps(tmp_path: Path) -> None:
    world = category_world(6, 3)
    options: dict[str, Any] = {
        "episode": {"rounds_init": 1, "rounds_update": 1, "user_concurrency": 1, "candidate_concurrency": 1},
        "budget": {"generations": 3, "candidates": 3},
        "optuna": {"pruner": "none"},
    }
    first, first_backend = evolve(tmp_path, "vfirst", CategoryBackend(world, proposer_mode="step", answer_noise=0.3),
                                  strategy={"order": "validation_first", "minibatch": None}, **options)
    train_first, train_backend = evolve(tmp_path, "tfirst", CategoryBackend(world, proposer_mode="step",
                                                                            answer_noise=0.3),
                                        strategy={"order": "train_first", "minibatch": None}, **options)
    assert first.best.id != first.seed.id
    skipped = [c for outcome in first.history[1:] for c in outcome.train_skipped]
    assert skipped, "no candidate was spared its train users"
    study = optuna.load_study(study_name="test-evolution", storage=f"sqlite:///{tmp_path / 'vfirst' / 'optuna.db'}")
    trials = {t.user_attrs.get("candidate_id"): t for t in study.trials}
    for outcome in first.history[1:]:
        assert len(outcome.accepted_ids) <= 1 and set(outcome.accepted_ids) <= set(outcome.train)
        assert set(outcome.val) == set(outcome.train) | set(outcome.train_skipped)
        for candidate_id in outcome.train_skipped:
            evals = tmp_path / "vfirst" / "evals" / candidate_id
            assert (evals / "val.json").exists() and not (evals / "train").exists()
            assert trials[candidate_id].state == optuna.trial.TrialState.PRUNED  # no train value was measured
            assert f"val_{first.objective}" in trials[candidate_id].user_attrs
    assert len(first_backend.calls_for("agent")) < len(train_backend.calls_for("agent"))


def test_first_accepted_ends_a_generation_at_its_first_accepted_candidate(tmp_path: Path) -> None:
    world = category_world(6, 3)
    options: dict[str, Any] = {
        "episode": {"rounds_init": 1, "rounds_update": 1, "user_concurrency": 1},
        "budget": {"generations": 3, "candidates": 3},
        "split": {"train": 3, "val": 2, "test": 1},
    }
    first, first_backend = evolve(tmp_path, "first", CategoryBackend(world, proposer_mode="step"),
                                  tracking={"enabled": True}, **options)
    every, every_backend = evolve(tmp_path, "every", CategoryBackend(world, proposer_mode="step"),
                                  strategy={"first_accepted": False}, **options)
    plans = {plan.generation: plan for plan in (
        GenerationPlan.model_validate_json(path.read_text())
        for path in (tmp_path / "first" / "generations").glob("gen_*/plan.json"))}
    study = optuna.load_study(study_name="test-evolution", storage=f"sqlite:///{tmp_path / 'first' / 'optuna.db'}")
    trials = {t.user_attrs.get("candidate_id"): t for t in study.trials}
    client = MlflowClient(f"sqlite:///{tmp_path / 'first' / 'mlflow.db'}")
    runs = {run.data.tags.get("memevo.candidate_id"): run
            for run in client.search_runs([client.get_experiment_by_name("test-evolution").experiment_id])}
    spared = 0
    for outcome in first.history[1:]:
        order = [c.id for c in plans[outcome.generation].candidates]
        tried = [c for c in order if c not in outcome.not_needed]
        assert tried == order[: len(tried)] and set(outcome.val) == set(tried)  # the plan's order, then none
        if outcome.not_needed:
            assert outcome.accepted_ids == [tried[-1]]  # the last one tried was accepted: the rest were not needed
        for candidate_id in outcome.not_needed:
            spared += 1
            assert not (tmp_path / "first" / "evals" / candidate_id).exists()
            assert trials[candidate_id].state == optuna.trial.TrialState.FAIL  # never run: not shown as pruned
            # its own MLflow run (no scores) and its trial say the same: the generation ended before it
            decision = "not run: generation ended (an earlier candidate was accepted)"
            assert runs[candidate_id].data.tags["memevo.decision"] == decision
            assert trials[candidate_id].user_attrs["decision"] == decision
            assert trials[candidate_id].user_attrs["mlflow_run_id"] == runs[candidate_id].info.run_id
            assert "val_objective" not in runs[candidate_id].data.metrics
        for candidate_id in set(outcome.val) - {outcome.kept_id}:
            assert trials[candidate_id].user_attrs["decision"] == runs[candidate_id].data.tags["memevo.decision"]
    assert spared, "no generation ended early"
    assert not any(outcome.not_needed for outcome in every.history)
    assert len(first_backend.calls_for("agent")) < len(every_backend.calls_for("agent"))


def test_a_generation_s_bar_ends_full_when_candidates_were_not_needed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(progress.sys.stderr, "isatty", lambda: True)  # bars are drawn on a terminal only
    result, _ = evolve(tmp_path, "bar", CategoryBackend(category_world(6, 3), proposer_mode="step"),
                       episode={"rounds_init": 1, "rounds_update": 1, "user_concurrency": 1},
                       budget={"generations": 3, "candidates": 3}, split={"train": 3, "val": 2, "test": 1})
    assert any(outcome.not_needed for outcome in result.history[1:])
    last: dict[int, tuple[int, int]] = {}  # each generation bar's last drawn state: done / total
    for generation, done, total in re.findall(r"generation (\d+): +\d+%\|[^|]*\| (\d+)/(\d+)", capsys.readouterr().err):
        last[int(generation)] = (int(done), int(total))
    for outcome in result.history[1:]:
        run = len(outcome.val)  # first accepted: every candidate tried ran on validation
        assert last[outcome.generation] == (run, run)


def test_validation_first_checks_a_minibatch_and_completes_a_parent_s_train_users(tmp_path: Path) -> None:
    world = category_world(6, 3)
    result, _ = evolve(tmp_path, "mini", CategoryBackend(world, proposer_mode="step"),
                       strategy={"order": "validation_first", "minibatch": 1},
                       episode={"rounds_init": 1, "rounds_update": 1, "user_concurrency": 1})
    evals = tmp_path / "mini" / "evals"
    accepted = [c for outcome in result.history[1:] for c in outcome.accepted_ids]
    assert accepted and not any(outcome.train for outcome in result.history[1:])  # no train score was measured
    plans = [GenerationPlan.model_validate_json(path.read_text())
             for path in sorted((tmp_path / "mini" / "generations").glob("gen_*/plan.json"))]
    for candidate_id in accepted:
        check = CandidateEval.model_validate_json((evals / candidate_id / "minibatch.json").read_text())
        assert len(check.users) == 1
        became_parent = any(plan.parent_id == candidate_id for plan in plans)
        assert (evals / candidate_id / "train.json").exists() == became_parent


def test_a_parent_completing_its_train_users_logs_their_scores_to_its_own_candidate_run(tmp_path: Path) -> None:
    world = category_world(6, 3)
    result, _ = evolve(tmp_path, "logged", CategoryBackend(world, proposer_mode="step"),
                       strategy={"order": "validation_first", "minibatch": 1}, tracking={"enabled": True},
                       episode={"rounds_init": 1, "rounds_update": 1, "user_concurrency": 1})
    evals = tmp_path / "logged" / "evals"
    plans = [GenerationPlan.model_validate_json(path.read_text())
             for path in sorted((tmp_path / "logged" / "generations").glob("gen_*/plan.json"))]
    completed = {plan.parent_id for plan in plans if (evals / plan.parent_id / "minibatch.json").exists()}
    assert completed, "no parent checked on a minibatch completed its train users"
    client = MlflowClient(f"sqlite:///{tmp_path / 'logged' / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("test-evolution").experiment_id])
    for candidate_id in completed:
        (run,) = [run for run in runs if run.data.tags.get("memevo.candidate_id") == candidate_id]  # no second run
        train = CandidateEval.model_validate_json((evals / candidate_id / "train.json").read_text())
        generation = int(run.data.tags["memevo.generation"])
        assert run.data.metrics["train_objective"] == pytest.approx(train.score)
        assert run.data.metrics["train_accuracy"] == pytest.approx(sum(u.accuracy for u in train.users) / 2)
        assert run.data.metrics["train_users_evaluated"] == 2 and "train_amemgym_memory_score" in run.data.metrics
        assert [m.step for m in client.get_metric_history(run.info.run_id, "train_accuracy")] == [generation]


def test_a_completed_parent_s_results_csv_lists_every_train_user_also_after_a_kill(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    world = category_world(6, 3)
    options: dict[str, Any] = {"strategy": {"order": "validation_first", "minibatch": 1}, "tracking": {"enabled": True},
                               "episode": {"rounds_init": 1, "rounds_update": 1, "user_concurrency": 1}}
    writes = Tracker.update_candidate

    def killed_after_the_writes(self: Tracker, *args: Any, **kwargs: Any) -> None:
        writes(self, *args, **kwargs)
        raise Killed("killed after the completed parent's writes, before its generation's plan was saved")

    monkeypatch.setattr(Tracker, "update_candidate", killed_after_the_writes)
    with pytest.raises(Killed):
        evolve(tmp_path, "results", CategoryBackend(world, proposer_mode="step"), **options)
    monkeypatch.undo()
    result, _ = evolve(tmp_path, "results", CategoryBackend(world, proposer_mode="step"), resume=True, **options)
    run_dir = tmp_path / "results"
    evals = run_dir / "evals"
    plans = [GenerationPlan.model_validate_json(path.read_text())
             for path in sorted((run_dir / "generations").glob("gen_*/plan.json"))]
    completed = {plan.parent_id for plan in plans if (evals / plan.parent_id / "minibatch.json").exists()}
    assert completed, "no parent checked on a minibatch completed its train users"
    client = MlflowClient(f"sqlite:///{run_dir / 'mlflow.db'}")
    runs = {run.data.tags.get("memevo.candidate_id"): run
            for run in client.search_runs([client.get_experiment_by_name("test-evolution").experiment_id])}

    def results(candidate_id: str) -> list[dict[str, str]]:
        run_id = runs[candidate_id].info.run_id
        assert [f.path for f in client.list_artifacts(run_id) if f.path.endswith(".csv")] == ["results.csv"]
        return list(csv.DictReader(io.StringIO(Path(client.download_artifacts(run_id, "results.csv", str(
            tmp_path / run_id))).read_text())))

    seed_rows = results(result.seed.id)  # run on every train user in generation 0
    for candidate_id in completed:
        rows = results(candidate_id)
        assert list(rows[0]) == list(seed_rows[0])  # the same columns
        train = CandidateEval.model_validate_json((evals / candidate_id / "train.json").read_text())
        val = CandidateEval.model_validate_json((evals / candidate_id / "val.json").read_text())
        for split, users in (("train", train.users), ("val", val.users)):
            listed = [row for row in rows if row["split"] == split]
            assert {row["user_id"] for row in listed} == {user.user_id for user in users}
            assert len(listed) == len([row for row in seed_rows if row["split"] == split])  # same questions
        keys = [(row["split"], row["user_id"], row["period"], row["question"]) for row in rows]
        assert len(keys) == len(set(keys))  # the resume wrote no row twice
        history = client.get_metric_history(runs[candidate_id].info.run_id, "train_objective")
        assert [m.value for m in history] == [pytest.approx(train.score)]  # nor a metric row


def test_a_parent_kept_on_its_minibatch_checks_its_children_on_the_same_train_users(tmp_path: Path) -> None:
    world = category_world(6, 3)
    result, _ = evolve(tmp_path, "kept", CategoryBackend(world, proposer_mode="step"),
                       strategy={"order": "validation_first", "minibatch": 2, "complete_parent_train": False},
                       split={"train": 3, "val": 2, "test": 1},
                       episode={"rounds_init": 1, "rounds_update": 1, "user_concurrency": 1})
    evals = tmp_path / "kept" / "evals"
    accepted = {c: outcome.generation for outcome in result.history[1:] for c in outcome.accepted_ids}
    plans = [GenerationPlan.model_validate_json(path.read_text())
             for path in sorted((tmp_path / "kept" / "generations").glob("gen_*/plan.json"))]
    children = [(plan.parent_id, c.id) for plan in plans for c in plan.candidates
                if plan.parent_id in accepted and (evals / c.id / "minibatch.json").exists()]
    assert children  # a kept candidate became a parent and had a child checked on train users
    for candidate_id in accepted:
        assert not (evals / candidate_id / "train.json").exists()  # never completed, parent or not
    for parent_id, child_id in children:
        users = [CandidateEval.model_validate_json((evals / c / "minibatch.json").read_text()).users
                 for c in (parent_id, child_id)]
        assert [u.user_id for u in users[0]] == [u.user_id for u in users[1]]


@pytest.mark.parametrize(("proposer", "resamples", "expected"),
                         [("RepeatingProposerDouble", None, 3), ("AlwaysRepeatingProposerDouble", None, 1),
                          ("AlwaysRepeatingProposerDouble", 1, 1), ("AlwaysRepeatingProposerDouble", 0, 1)])
def test_a_proposal_repeating_a_known_policy_is_asked_for_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                caplog: pytest.LogCaptureFixture, proposer: str,
                                                                resamples: int | None, expected: int) -> None:
    register_proposer_double(monkeypatch, "repeating", proposer)
    caplog.set_level(logging.INFO, logger="memevo.evolve")
    strategy: dict[str, Any] = {"proposers": ["repeating"]} | ({} if resamples is None else {"resamples": resamples})
    evolve(tmp_path, "repeat", strategy=strategy, budget={"generations": 1, "candidates": 3})
    plan = GenerationPlan.model_validate_json((tmp_path / "repeat" / "generations" / "gen_001" / "plan.json").read_text())
    ids = [candidate.id for candidate in plan.candidates]
    assert len(ids) == expected == len(set(ids)) and [c.index for c in plan.candidates] == list(range(expected))
    tries = 2 if resamples is None else resamples  # strategy.resamples, default 2
    if expected == 3:  # one repeat, asked for again once: a new sample filled the slot
        assert plan.stats.duplicates == 1 and "instrument number 3" in plan.candidates[2].policy.prompts["memory_types"]
    else:  # every new sample repeated too: after the bounded tries the generation runs with fewer, and says so
        assert plan.stats.duplicates == 2 + 2 * tries
        assert f"after {tries} new tries: 1 candidate(s) instead of 3" in caplog.text
    assert "repeated a known policy" in caplog.text


VALIDATION_FIRST = {**ALL_STRATEGIES, "strategy": {"proposers": ["reflection", "delta", "merge"], "parents": "pareto",
                                                   "order": "validation_first", "minibatch": 2},
                    "split": {"train": 3, "val": 2, "test": 1}}  # a minibatch of 2 of 3: parents complete theirs


@pytest.mark.parametrize(("fraction", "strategies"), [(0.35, ALL_STRATEGIES), (0.8, ALL_STRATEGIES),
                                                      (0.4, VALIDATION_FIRST), (0.75, VALIDATION_FIRST),
                                                      (0.55, {**VALIDATION_FIRST, "strategy": {
                                                          **VALIDATION_FIRST["strategy"], "first_accepted": False}}),
                                                      (0.6, {**VALIDATION_FIRST, "strategy": {
                                                          **VALIDATION_FIRST["strategy"],
                                                          "complete_parent_train": False}})])
def test_every_strategy_resumes_after_a_kill_to_the_identical_result(tmp_path: Path, fraction: float,
                                                                     strategies: dict[str, Any]) -> None:
    world = category_world(6, 3)
    whole, full_backend = evolve(tmp_path, "whole", CategoryBackend(world, proposer_mode="step"), **strategies)
    crash_at = int(len(full_backend.calls) * fraction)
    killed_backend = CrashingBackend(world, proposer_mode="step", crash_after=crash_at)
    with pytest.raises(Killed):
        evolve(tmp_path, "killed", killed_backend, **strategies)
    resumed, resumed_backend = evolve(tmp_path, "killed", CategoryBackend(world, proposer_mode="step"), resume=True,
                                      **strategies)
    assert _comparable(resumed) == _comparable(whole)
    assert resumed.usage.total() == _served(killed_backend, resumed_backend)


def test_pareto_with_one_validation_user_from_a_fraction_fails_before_the_run_folder(tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match="at least 2 validation users") as caught:
        evolve(tmp_path, "pareto", strategy={"parents": "pareto"}, split={"train": 0.34, "val": 0.17, "test": 0.34})
    assert caught.value.field == "strategy.parents"
    assert not (tmp_path / "pareto").exists()
