"""AMemGym's own evolution protocol (G.1-G.4): each user gets a fresh agent that rewrites its evolving
components after each period's questions, from that period's feedback only.

Fixes against the reference: no evolution after the last period (its result could never be scored,
I.15); a bad proposal is rejected and counted instead of crashing the run (I.18); prompts are
substituted without brace escaping (I.17, I.19). Every step is saved under
``<run_dir>/in_episode/<user>/period_XX.json`` before the period counts as finished, so a resumed user
continues with the prompts it had evolved (every call is in the run's usage ledger as it is made). The same
users are also run without evolution (the seed), so one run yields both rows of AMemGym's Table 3.
The proposal takes the outer loop's path: the period's evidence, rendered to the token budget, goes to
the configured proposers (one variant per step). Like the outer loop it tells the world through events
(``UserEvolved``, ``InEpisodeEnded``): the tracker and the terminal are observers.
"""

from __future__ import annotations

from pathlib import Path

from memevo.agents.base import MemoryAgent
from memevo.core.atomic_files import write_json_atomic
from memevo.core.lazy_model import LazyModel
from memevo.core.run_files import RESTORE, read_model
from memevo.environments.amemgym.data.ids import folder_name
from memevo.environments.item_run import ItemRun
from memevo.environments.metrics import score_episodes, user_scores
from memevo.environments.records import PeriodResult
from memevo.environments.runner import bounded_gather
from memevo.environments.store import RunStore
from memevo.evolve import runtime
from memevo.evolve.candidates import Candidate
from memevo.evolve.config import EvolveConfig
from memevo.evolve.events import InEpisodeEnded, UserEvolved
from memevo.evolve.evidence import evidence_from_periods, render_evidence
from memevo.evolve.proposers import ProposalContext, propose_all
from memevo.evolve.records import EvolutionResult, ProposalStats


class EvolutionStep(LazyModel):
    """One in-episode evolution step of one user (the reference's evolution_history entry)."""

    user_id: str
    period: int
    prompts: dict[str, str]
    changes: list[str] = []
    stats: ProposalStats


class InEpisodeEvolution(runtime.RunBase):
    """Runs the test users twice: seed without evolution, and evolving after each period."""

    def __init__(self, config: EvolveConfig, run_dir: Path, hub: runtime.Hub, *, resume: bool) -> None:
        super().__init__(config, run_dir, hub, resume=resume)
        self.user_ids = self.split.test or self.split.val or self.split.train  # see required_splits

    def _step_path(self, user_id: str, period: int) -> Path:
        return self.run_dir / "in_episode" / folder_name(user_id) / f"period_{period:02d}.json"

    async def _evolve_after(self, agent: MemoryAgent, result: PeriodResult) -> None:
        item = self.items[result.user_id]
        if result.period >= len(item.periods) - 1:
            return
        evidence = render_evidence(evidence_from_periods([result], self.items, self.config.feedback),
                                   self.config.evidence_max_tokens)
        context = ProposalContext(
            generation=result.period + 1, parent=Candidate(policy=agent.policy), evidence=evidence,
            components=[agent.spec.component(name) for name in self.config.components], task=self.config.task,
            bounds=self.bounds,
        )
        variants, stats = await propose_all(self.proposers, context, 1)
        prompts = variants[0].prompts if variants else {}
        changes = variants[0].changes if variants else []
        agent.policy = agent.policy.with_prompts(**prompts)
        step = EvolutionStep(user_id=result.user_id, period=result.period, prompts=dict(agent.policy.prompts),
                             changes=changes, stats=stats)
        write_json_atomic(self._step_path(result.user_id, result.period), step.model_dump(mode="json"))
        self.observers.notify(UserEvolved(step, evolved=sorted(prompts)))

    def _period_saved(self, agent: MemoryAgent, result: PeriodResult) -> None:
        """A period (and the step evolved after it) is on disk. On resume, a restored period brings back
        the prompts evolved after it."""
        remedy = f"{RESTORE}: the prompts evolved after that period are only recorded there"
        step = read_model(self._step_path(result.user_id, result.period), EvolutionStep, remedy=remedy)
        if step is not None:
            agent.policy = agent.policy.model_copy(update={"prompts": step.prompts})

    async def _evolving_user(self, user_id: str, store: RunStore) -> None:
        agent = self.evaluator.make_agent(self.seed.policy)
        await self.evaluator.environment.run_item(
            agent, self.items[user_id], self.evaluator.simulator,
            ItemRun(store=store, user_id=user_id, after_period=self._evolve_after,
                    on_period=lambda result: self._period_saved(agent, result)),
        )

    async def run(self) -> EvolutionResult:
        items = [self.items[user_id] for user_id in self.user_ids]
        table = await self.upper_bound_table(items)
        await self.evaluator.evaluate(self.seed, "test", self.user_ids)
        seed_scores, seed_users = self.scores(self.seed.id, "test", self.user_ids)
        store = RunStore(self.run_dir / "in_episode" / "episodes")
        await bounded_gather(self.user_ids, lambda user_id: self._evolving_user(user_id, store),
                             self.evaluator.episode_config.max_concurrent_users)
        episodes = [store.load_episode(user_id) for user_id in self.user_ids]
        evolved = [e for e in episodes if e is not None]
        evolved_scores, evolved_users = (score_episodes(evolved, items, table), user_scores(evolved, items, table))
        result = EvolutionResult(
            protocol="amemgym_period", environment=self.config.environment, objective=self.config.objective, seed=self.seed, best=self.seed, seed_scores=seed_scores,
            best_scores=evolved_scores, seed_user_scores=seed_users, best_user_scores=evolved_users,
            stop_reason="all periods evolved", usage=self.usage.report(),
        )
        write_json_atomic(self.run_dir / "result.json", result.model_dump(mode="json"))
        self.observers.notify(InEpisodeEnded(result))
        return result

