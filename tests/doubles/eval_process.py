"""TEST DOUBLE: one ``memevo eval`` process on the small fixture against the killing endpoint, forked from the fork
server (kill_points.py), to its end or its kill; what the run's usage ledger holds after it and what the endpoint
served it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from memevo.agents.llm.accounting import RoleUsage
from memevo.environments.rundir import LEDGER_FILE, read_ledger
from tests.doubles.kill_points import ForkedMemevo
from tests.doubles.killing_endpoint import KillingEndpoint, Trigger

FIXTURE = Path(__file__).parents[1] / "fixtures" / "amemgym_small.json"
PRELOADED = ("memevo.evolve.cli.main", "memevo.environments.eval_cli", "memevo.agents.llm.hub", "diskcache")
"""What the fork server imports once for these children (see ``kill_points.start_fork_server``)."""

Kill = Trigger | str
"""A request trigger (killing_endpoint) or a planted kill point (kill_points)."""


@dataclass
class EvalProcess:
    """How one process ended, the run's usage after it (all its processes so far), and what the endpoint did."""

    code: int
    usage: RoleUsage
    served: list[str]
    """Digests of the requests the endpoint answered to this process."""
    unanswered: int
    """Requests the endpoint killed this process over, unanswered."""
    output: str

    @property
    def sent(self) -> int:
        """Requests whose answer or failure the ledger counted."""
        return self.usage.calls - self.usage.cache_hits + self.usage.errors

    @property
    def unknown(self) -> int:
        """Requests the ledger counts as unknown (0 for a version that books none)."""
        return getattr(self.usage, "unknown_calls", 0)


def run_eval(endpoint: KillingEndpoint, out: Path, *, resume: bool, kill: Kill | None = None,
             width: int = 1) -> EvalProcess:
    """``memevo eval`` into ``out`` (its cache beside it), ``width`` requests and up to two users at once."""
    agent = out.parent / "agent.yaml"
    agent.write_text(f"kind: native\nllm: {{model: gpt-4.1-mini, base_url: '{endpoint.url}', "
                     f"max_concurrency: {width}}}\n")
    env = {**os.environ, "MEMEVO_CACHE_DIR": str(out.parent / "cache"), "OPENAI_API_KEY": "test"}
    argv = ["eval", "--agent", str(agent), "--env", str(FIXTURE), "--out", str(out), "--simulator", "template",
            "--max-concurrent-users", str(min(width, 2)), *(["--resume"] if resume else [])]
    output = out.parent / f"process-{len(list(out.parent.glob('process-*')))}.log"
    served, unanswered = len(endpoint.served), endpoint.unanswered
    process = endpoint.watch(
        lambda: ForkedMemevo(argv, cwd=out.parent, env=env, kill_at=kill if isinstance(kill, str) else None,
                             output=output),
        out, [kill] if kill is not None and not isinstance(kill, str) else [])
    assert isinstance(process, ForkedMemevo)
    code = process.finish()
    endpoint.done()
    return EvalProcess(code, read_ledger(out / LEDGER_FILE).total(), endpoint.served[served:],
                       endpoint.unanswered - unanswered, process.text())
