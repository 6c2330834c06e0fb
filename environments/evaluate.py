"""One evaluation of an agent on any benchmark: what ``memevo eval`` and ``memevo.evolve.api.evaluate`` both run.

The request names the environment; its ``Capabilities`` decide what may be asked (an upper bound, a no-memory
baseline, probes, a recorded run to replay, AMemGym's protocol switches, the environment's own options: anything
else is refused naming its flag) and how the items are played: live with a user simulator
(``environments.amemgym.evaluation``: per-period records, tables, plot) or replayed from their own sessions
(here). Either way the items are read, prepared and played through the ``Environment`` protocol, in a run folder
guarded by ``rundir`` (``.lock``, ``inputs.json`` that a resume must match, ``usage.jsonl``), resumable per period.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from memevo.agents.registry import build_agent
from memevo.core.atomic_files import write_json_atomic
from memevo.core.errors import UserInputError
from memevo.core.setting_names import given, setting
from memevo.environments.amemgym.evaluation import evaluate_live
from memevo.environments.capabilities import Capabilities
from memevo.environments.eval_run import EvalReport, EvalRequest, prepare_out, usage_summary
from memevo.environments.formats import read_as
from memevo.environments.metrics import score_episodes, user_scores
from memevo.environments.play import run_items
from memevo.environments.progress import configure_terminal, phase
from memevo.environments.question_table import REPLAY_COLUMNS, question_rows, write_csv
from memevo.environments.registry import (
    capabilities_of,
    check_options,
    environments_with,
    make_environment,
)
from memevo.environments.resume import resumable_as, run_resumable
from memevo.environments.rundir import (
    LEDGER_FILE,
    UsageLedger,
    check_inputs,
    claim_run_folder,
    item_fingerprints,
)
from memevo.environments.runner import EpisodeConfig
from memevo.environments.score_text import score_lines
from memevo.environments.store import RunStore

NEEDS: dict[str, str] = {
    "upper_bound": "upper_bound", "no_memory_baseline": "no_memory_baseline", "diagnose": "diagnosis",
    "amemgym_compat": "amemgym_protocol", "amemgym_source": "amemgym_protocol", "off_policy": "replays_recorded_runs",
}
"""Request field -> the capability (``Capabilities`` attribute) it needs."""


def check_request(request: EvalRequest, capabilities: Capabilities) -> None:
    """A setting the environment cannot honour is a ``UserInputError`` naming it (as the caller's front end spells
    it) and the environments that take it."""
    for field, needs in NEEDS.items():
        if getattr(request, field) not in (False, None) and not getattr(capabilities, needs):
            raise UserInputError(f"applies to {given('environment', environments_with(_having(needs)))} only",
                                 field=setting(field))
    check_options(request.environment, request.options)


def _having(capability: str) -> Callable[[Capabilities], bool]:
    return lambda capabilities: bool(getattr(capabilities, capability))


def evaluate(request: EvalRequest, *, resume_hint: str) -> EvalReport:
    """Evaluate ``request.policy`` on the environment's items into ``request.out`` (or resume it there);
    ``resume_hint`` is what an interrupted or failed run tells its user to run to continue it."""
    capabilities = capabilities_of(request.environment, field=setting("environment"))
    check_request(request, capabilities)
    if capabilities.sessions == "on_policy":
        return evaluate_live(request, resume_hint)
    return _evaluate_replayed(request, resume_hint)


def _evaluate_replayed(request: EvalRequest, resume_hint: str) -> EvalReport:
    """Replay a benchmark's items through an agent (resumable per item in ``out/run``), score them and write
    ``summary.json`` and ``questions.jsonl``.

    The items are read before the LLM hub starts and played by an environment made inside it, with the judge: a
    replayed benchmark's item holds everything its scoring reads, so which object read it does not matter."""
    policy, out = request.policy, request.out
    config = EpisodeConfig(constrained_answers=request.constrained_answers, seed=request.seed,
                           max_concurrent_users=request.max_concurrent_users or 1)
    reader = make_environment(request.environment, config, field=setting("environment"), options=request.options)
    with read_as(request.environment, request.data):
        items = reader.prepared(reader.load_items(request.data, limit=request.users), source=request.data)
    notes = [f"note: {warning}" for warning in getattr(reader, "load_warnings", [])]
    policy.llm.concurrency(embedded=False, override=request.concurrency)
    judge_llm = policy.llm if request.judge_model is None else policy.llm.model_copy(
        update={"model": request.judge_model})
    inputs = {"environment": request.environment, "data": item_fingerprints(items),
              "policy": json.loads(policy.canonical_json()), "episode": config.protocol(),
              "judge_llm": judge_llm.model_dump(mode="json")}
    configure_terminal()

    async def main() -> EvalReport:
        from memevo.agents.llm.hub import LLMHub

        async with LLMHub(use_cache=request.use_cache, concurrency=request.concurrency,
                          accounting=UsageLedger(out / LEDGER_FILE)) as hub:
            llm = hub.client(policy.llm)
            width = request.max_concurrent_users or llm.width
            run_config = config.model_copy(update={"max_concurrent_users": width})
            environment = make_environment(request.environment, run_config, judge=hub.client(judge_llm),
                                           options=request.options)
            with phase("items", len(items), "item") as bar:
                episodes = await run_items(environment, lambda: build_agent(policy, llm), items, None,
                                           RunStore(out / "run"), on_period=lambda _: bar.advance(), traces=False)
            scores = score_episodes(episodes, items)
            per_user = user_scores(episodes, items)
            usage = hub.accounting.report()
            records = [record for episode in episodes for period in episode.periods for record in period.qa]
            with (out / "questions.jsonl").open("w", encoding="utf-8") as file:
                for record in records:
                    file.write(record.model_dump_json() + "\n")
            write_csv(out / "questions.csv", REPLAY_COLUMNS, question_rows(records))
            write_json_atomic(out / "summary.json", {
                "environment": request.environment, "agent": policy.kind, "policy_id": policy.policy_id,
                "model": policy.llm.model, "env": request.data, "n_items": len(items),
                "scores": scores.model_dump(mode="json"),
                "user_scores": [u.model_dump(mode="json") for u in per_user],
                "usage": usage_summary(usage),
            })
            headline = "\n".join([f"{request.environment}: {len(items)} items", *score_lines(scores), *notes,
                                  f"results: {out}"])
            return EvalReport(headline=headline, scores=scores, user_scores=per_user, usage=usage)

    with claim_run_folder(out, field="out", kind="eval"):
        prepare_out(out, request.resume)
        check_inputs(out, inputs)
        with resumable_as(resume_hint):
            return run_resumable(main())
