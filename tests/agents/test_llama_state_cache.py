"""The embedded server's prompt cache stays within its capacity counting everything a saved state holds."""

from __future__ import annotations

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("llama_cpp")

from llama_cpp import LlamaRAMCache  # noqa: E402
from llama_cpp.llama import LlamaState  # noqa: E402

from memevo.agents.llm.state_cache import BoundedStateCache, slimmed, state_bytes  # noqa: E402

N_VOCAB, N_BATCH, N_CTX = 1000, 64, 256
LLAMA_BYTES = 10_000


def saved_state(n_tokens: int) -> LlamaState:
    """What ``Llama.save_state`` returns without ``logits_all``: the whole batch-sized logits buffer copied."""
    return LlamaState(input_ids=np.arange(N_CTX, dtype=np.intc), scores=np.ones((N_BATCH, N_VOCAB), np.single),
                      n_tokens=n_tokens, llama_state=b"x" * LLAMA_BYTES, llama_state_size=LLAMA_BYTES, seed=0)


def held_bytes(cache: LlamaRAMCache) -> int:
    return sum(state_bytes(state) for state in cache.cache_state.values())


@pytest.mark.parametrize("cache_class", [BoundedStateCache, pytest.param(LlamaRAMCache, marks=pytest.mark.xfail(
    reason="llama-cpp-python's own cache counts only llama.cpp's bytes", strict=True))])
def test_cached_states_never_hold_more_than_the_capacity(cache_class):
    capacity = 5 * (LLAMA_BYTES + N_VOCAB * 4 + N_CTX * 4)
    cache = cache_class(capacity_bytes=capacity)
    for index in range(40):
        cache[[index, *range(100, 130)]] = saved_state(n_tokens=31)
        assert held_bytes(cache) <= capacity
    assert len(cache.cache_state) == 5


def test_a_state_keeps_one_row_of_logits_and_loads_back_into_the_buffer():
    cache = BoundedStateCache(capacity_bytes=1 << 30)
    cache[[1, 2, 3]] = saved_state(n_tokens=3)
    state = cache[[1, 2, 3, 4]]
    assert state.scores.shape == (1, N_VOCAB) and state.n_tokens == 3
    buffer = np.zeros((N_BATCH, N_VOCAB), np.single)
    buffer[: state.n_tokens, :] = state.scores.copy()  # what Llama.load_state does with it
    assert buffer[:3].sum() == 3 * N_VOCAB


def test_the_least_recently_used_state_goes_first():
    cache = BoundedStateCache(capacity_bytes=2 * state_bytes(slimmed(saved_state(1))))
    cache[[1]], cache[[2]] = saved_state(1), saved_state(1)
    assert cache[[1]] is not None  # a hit makes [1] the most recent
    cache[[3]] = saved_state(1)
    assert set(cache.cache_state) == {(1,), (3,)}
