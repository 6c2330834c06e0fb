"""Prices: litellm's table for the models memevo's old table lacked, the config's ``price`` over it, free servers on
this machine, unpriced remote models named once, and a dollar budget that stops instead of counting them as $0."""

from __future__ import annotations

import pytest

from memevo.agents.llm import pricing
from memevo.agents.llm.accounting import Accounting, RoleUsage, UsageReport, dollars_text
from memevo.agents.llm.config import LLMConfig
from memevo.agents.llm.gateway import LLMGateway
from memevo.agents.llm.pricing import FREE, Price, Pricing, table_price
from memevo.evolve.config import BudgetConfig
from memevo.evolve.spend import budget_exceeded
from tests.doubles.fault_server import FaultServer

REMOTE = "https://api.example.com/v1"


@pytest.mark.parametrize(("model", "prompt", "completion"), [
    ("gpt-5-mini", 0.25, 2.0),
    ("o4-mini", 1.1, 4.4),
    ("claude-sonnet-4-5", 3.0, 15.0),
    ("anthropic/claude-sonnet-4-5-20250929", 3.0, 15.0),
    ("gemini-2.5-flash", 0.3, 2.5),
    ("text-embedding-3-small", 0.02, 0.0),
])
def test_litellm_prices_the_models_the_old_table_did_not_know(model: str, prompt: float, completion: float) -> None:
    price = table_price(model)
    assert price is not None
    assert (price.prompt, price.completion) == (pytest.approx(prompt), pytest.approx(completion))


def test_a_fine_tune_is_not_priced_as_the_model_its_name_starts_with() -> None:
    assert table_price("gpt-4o-my-finetune") is None
    assert table_price("sample_spec") is None  # litellm's documentation entry is no model


def test_the_configs_price_wins_and_an_unknown_model_on_this_machine_is_free() -> None:
    own = Price(prompt=1.0, completion=2.0)
    remote = Pricing({"gpt-4o-mini": own}, endpoint=REMOTE)
    assert remote.price_for("gpt-4o-mini") == own
    assert remote.price_for("gpt-4o") == table_price("gpt-4o")  # the override is for the config's model only
    assert Pricing(endpoint="http://127.0.0.1:8080/v1").price_for("Qwen/Qwen2.5-7B-Instruct") == FREE
    assert Pricing(endpoint="http://[::1]:8080/v1").price_for("qwen2.5:7b") == FREE
    assert Pricing(endpoint="http://127.0.1.1:8080/v1").price_for("qwen2.5:7b") == FREE
    assert Pricing(endpoint="http://localhost:8080/v1").price_for("gpt-4o") == table_price("gpt-4o")  # a proxy bills


def test_an_unpriced_remote_model_is_named_once_with_the_fix(capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pricing, "_named", set())
    remote = Pricing(endpoint=REMOTE)
    assert remote.price_for("house-model") is None
    assert remote.price_for("house-model") is None
    err = capsys.readouterr().err
    assert err.count("'house-model'") == 1 and REMOTE in err and "llm.price" in err
    assert Pricing().price_for("other-house-model") is None  # a count outside a gateway names nothing
    assert capsys.readouterr().err == ""


def test_a_count_bills_at_the_price_it_is_given() -> None:
    accounting = Accounting()
    own = Pricing({"house-model": Price(prompt=2.0, completion=10.0)}, endpoint=REMOTE)
    accounting.record_call("agent", model="house-model", prompt_tokens=1_000_000, completion_tokens=100_000,
                           wall_s=1, cached=False, pricing=own)
    accounting.record_call("judge", model="house-model", prompt_tokens=10, completion_tokens=1, wall_s=0,
                           cached=False)
    usage = accounting.report().by_role
    assert usage["agent"].dollars == pytest.approx(3.0) and usage["agent"].unpriced_calls == 0
    assert usage["judge"].unpriced_calls == 1 and usage["judge"].dollars == 0


async def test_a_gateway_prices_its_models_calls_by_the_configs_price() -> None:
    with FaultServer() as server:
        config = LLMConfig(model="house-model", max_retries=0, price={"prompt": 1e6, "completion": 0})
        gateway = LLMGateway(config, base_url=server.url, cache=None, accounting=Accounting())
        reply = await gateway.chat([{"role": "user", "content": "hello"}], role="agent")
        await gateway.aclose()
    usage = gateway.accounting.report().by_role["agent"]
    assert reply.prompt_tokens > 0 and usage.dollars == pytest.approx(reply.prompt_tokens)


def test_a_config_without_a_price_dumps_as_before_and_a_negative_price_is_refused() -> None:
    assert "price" not in LLMConfig(model="m").model_dump()
    assert LLMConfig(model="m", price={"prompt": 0.5, "completion": 1.5}).model_dump()["price"] == {
        "prompt": 0.5, "completion": 1.5}
    with pytest.raises(ValueError, match="price.prompt"):
        LLMConfig(model="m", price={"prompt": -1, "completion": 0})


def test_a_dollar_budget_stops_at_an_unpriced_call_instead_of_counting_it_free() -> None:
    unpriced = UsageReport(by_role={"agent": RoleUsage(calls=3, dollars=0.01, unpriced_calls=2)})
    stop = budget_exceeded(BudgetConfig(max_dollars=5.0), unpriced)
    assert stop is not None and stop.startswith("dollar budget (5.0): 2 call(s) had no known price")
    assert budget_exceeded(BudgetConfig(max_calls=100), unpriced) is None
    assert budget_exceeded(BudgetConfig(max_dollars=5.0), UsageReport(by_role={"agent": RoleUsage(calls=3)})) is None


def test_the_spend_line_names_the_fix_for_unpriced_calls() -> None:
    assert dollars_text(RoleUsage(calls=4, dollars=0.5, unpriced_calls=1)).endswith("(no known price: set llm.price)")


def test_a_price_changes_no_policy_id_and_a_resume_may_change_it() -> None:
    from memevo.agents.policy import MemoryPolicy
    from memevo.evolve.config import without_widths

    unpriced = MemoryPolicy(kind="native", llm=LLMConfig(model="house-model"))
    priced = MemoryPolicy(kind="native", llm=LLMConfig(model="house-model", price={"prompt": 1, "completion": 2}))
    assert priced.policy_id == unpriced.policy_id
    payload = {"llm": {"agent": {"model": "m", "price": {"prompt": 1, "completion": 2}}}}
    assert without_widths(payload) == {"llm": {"agent": {"model": "m"}}}


def test_a_dollar_budget_with_a_remote_model_of_no_price_is_refused_before_any_call(tmp_path) -> None:
    import yaml

    from memevo.core.errors import UserInputError
    from memevo.evolve.config import load_evolve_config

    proposer = {"model": "house-model", "base_url": REMOTE}
    config = {"seed": {"policy": {"kind": "awi"}}, "data": {"path": "data.json"}, "budget": {"max_dollars": 2.0},
              "llm": {"proposer": proposer}}
    path = tmp_path / "evolve.yaml"
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(UserInputError, match=r"set llm\.proposer\.price"):
        load_evolve_config(path)
    for fixed in ({**proposer, "price": {"prompt": 1, "completion": 2}}, {**proposer, "model": "gpt-5-mini"},
                  {"model": "house-model", "base_url": "http://127.0.0.1:8000/v1"}):
        path.write_text(yaml.safe_dump({**config, "llm": {"proposer": fixed}}))
        assert load_evolve_config(path).budget.max_dollars == 2.0
