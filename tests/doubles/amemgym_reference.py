"""TEST DOUBLE: AMemGym's own evaluator, run from a user's checkout against a recording scripted LLM.

Tests give AMemGym's code and memevo the same item, agent config and replies, and compare the requests each
sends. memevo never ships AMemGym's code: the checkout is found at ``MEMEVO_AMEMGYM_SOURCE`` (default
/tmp/amemgym), and tests skip when it is absent.

The checkout's modules are imported for one run and dropped afterwards. Stand-ins replace what would reach
outside or does not shape a request: ``call_llm`` (answered by the handler and recorded), the third-party
modules imported for the network, .env files, logging, progress bars and token counting, the upper bound's
3-second sleeps, and AWI's wall clock, which here moves one second per write: in a real run every write waits
for an LLM reply, so no two writes share a timestamp, while scripted replies come back within a millisecond.
"""

from __future__ import annotations

import copy
import importlib
import json
import os
import random
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any, Literal, NamedTuple

from memevo.agents.llm.protocol import Message, Role
from memevo.environments.amemgym.data.models import Item
from tests.doubles.scripted_llm import Handler

CHECKOUT = Path(os.environ.get("MEMEVO_AMEMGYM_SOURCE", "/tmp/amemgym"))
NO_CHECKOUT = f"no AMemGym checkout at {CHECKOUT} (set MEMEVO_AMEMGYM_SOURCE to one)"
ENV_CONFIG = "configs/env/v1.base.json"

Decoding = Literal["free", "json", "schema"]


class Request(NamedTuple):
    """One LLM request as the model would receive it: who asked, the messages, how the reply is decoded."""

    role: str
    messages: tuple[tuple[str, str], ...]
    decoding: Decoding

    @classmethod
    def of(cls, role: str, messages: Sequence[Message], decoding: Decoding) -> Request:
        return cls(role, tuple((m["role"], m["content"]) for m in messages), decoding)


def scripted_requests(calls: list[dict[str, Any]]) -> list[Request]:
    """The requests a ``ScriptedLLM`` recorded, in the same form."""
    return [
        Request.of(
            call["role"],
            call["messages"],
            "schema" if call["json_schema"] is not None else "json" if call["json"] else "free",
        )
        for call in calls
    ]


def has_checkout(root: Path = CHECKOUT) -> bool:
    return (root / "src/amemgym/eval/overall.py").is_file()


class _Silent:
    """Any attribute is a function that does nothing (loguru's ``logger``)."""

    def __getattr__(self, name: str) -> Callable[..., None]:
        return lambda *args, **kwargs: None


class _Clock:
    """Stands in for ``datetime`` in AMemGym's AWI module: ``now()`` is a second later at each call."""

    def __init__(self) -> None:
        self.at = datetime(2020, 1, 1)

    def now(self) -> datetime:
        self.at += timedelta(seconds=1)
        return self.at


def _refuse(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("AMemGym reached for the network in a test")


def _module(name: str, **attributes: Any) -> ModuleType:
    module = ModuleType(name)
    module.__dict__.update(attributes)
    return module


def _stand_ins() -> dict[str, ModuleType]:
    """Inert modules for the third-party imports of AMemGym's evaluator and agents."""
    modules = [
        _module("openai", OpenAI=_refuse),
        _module("dotenv", load_dotenv=lambda *args, **kwargs: False),
        _module("loguru", logger=_Silent()),
        _module("backoff", on_exception=lambda *args, **kwargs: lambda function: function, expo=None),
        _module("tqdm", tqdm=lambda iterable=None, *args, **kwargs: iterable),
        _module("tiktoken"),  # counts tokens only for off-policy RAG, never run here
    ]
    return {module.__name__: module for module in modules}


class AMemGymReference:
    """AMemGym's evaluator from ``checkout``; every LLM call is answered by ``handler`` and recorded in order.

    Roles given to the handler: ``agent`` (the assistant's replies, answers and memory writes),
    ``user_simulator`` and ``upper_bound``, as memevo names them.
    """

    def __init__(self, handler: Handler, checkout: Path = CHECKOUT) -> None:
        self.handler = handler
        self.checkout = checkout
        self.requests: list[Request] = []

    def env_config(self) -> dict[str, Any]:
        """The checkout's v1.base environment config (rounds per session)."""
        config: dict[str, Any] = json.loads((self.checkout / ENV_CONFIG).read_text(encoding="utf-8"))
        return config

    def evaluate(self, item: Item, agent_config: Path, out: Path) -> list[list[float]]:
        """``evaluate_item`` on-policy for one item with the agent of ``agent_config`` (a checkout config file);
        the accuracy per (period, question)."""
        (out / "interactions").mkdir(parents=True, exist_ok=True)  # made by AMemGym's main before evaluate_item
        with self._loaded() as amemgym:
            config = json.loads(agent_config.read_text(encoding="utf-8"))
            agent = amemgym.create_agent(config, output_dir=str(out))
            amemgym.evaluate_item(item.model_dump(mode="json"), agent, str(out), self.env_config())
        results = json.loads((out / "overall_results.json").read_text(encoding="utf-8"))
        return [[result["scores"]["accuracy"] for result in period] for period in results]

    def upper_bound(self, items: Sequence[Item], out: Path) -> list[list[list[float]]]:
        """``evaluate_utilization`` over ``items``: the accuracy per (item, period, question)."""
        out.mkdir(parents=True, exist_ok=True)
        with self._loaded() as amemgym:
            amemgym.evaluate_utilization([item.model_dump(mode="json") for item in items], {}, str(out))
        metrics = json.loads((out / "utilization_metrics.json").read_text(encoding="utf-8"))
        accuracy: list[list[list[float]]] = metrics["accuracy"]
        return accuracy

    def _client(self, role: Role) -> Callable[..., Any]:
        """AMemGym's ``call_llm``, answered by the handler."""

        def call_llm(
            messages: list[Message], llm_config: dict[str, Any], json: bool = False, return_token_usage: bool = False
        ) -> Any:
            sent = copy.deepcopy(messages)  # AMemGym's native agent goes on appending to the list it sent
            self.requests.append(Request.of(role, sent, "json" if json else "free"))
            text = self.handler(sent, role, json)
            return (text, {"input_tokens": 0, "output_tokens": 0, "time_elapsed": 0.0}) if return_token_usage else text

        return call_llm

    @contextmanager
    def _loaded(self) -> Iterator[SimpleNamespace]:
        """The checkout's evaluator with its stand-ins; afterwards its modules, the stand-ins and the global
        random state (AMemGym seeds it on import) are as they were."""
        stand_ins = _stand_ins()
        replaced = {name: sys.modules.get(name) for name in stand_ins}
        random_state = random.getstate()
        sys.modules.update(stand_ins)
        sys.path.insert(0, str(self.checkout / "src"))
        try:
            overall = importlib.import_module("amemgym.eval.overall")
            upperbound = importlib.import_module("amemgym.eval.upperbound")
            assistants = importlib.import_module("amemgym.assistants")
            clients: list[tuple[ModuleType, Role]] = [
                (assistants.awi, "agent"),
                (assistants.native, "agent"),
                (importlib.import_module("amemgym.env.sample_interactions"), "user_simulator"),
                (upperbound, "upper_bound"),
            ]
            for module, role in clients:
                setattr(module, "call_llm", self._client(role))
            setattr(assistants.awi, "datetime", _Clock())
            setattr(upperbound, "time", SimpleNamespace(sleep=lambda seconds: None))
            yield SimpleNamespace(
                create_agent=assistants.create_agent,
                evaluate_item=overall.evaluate_item,
                evaluate_utilization=upperbound.evaluate_utilization,
            )
        finally:
            sys.path.remove(str(self.checkout / "src"))
            for name in [name for name in sys.modules if name == "amemgym" or name.startswith("amemgym.")]:
                del sys.modules[name]
            for name, original in replaced.items():
                if original is None:
                    sys.modules.pop(name, None)
                else:
                    sys.modules[name] = original
            random.setstate(random_state)
