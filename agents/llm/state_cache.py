"""The embedded server's prompt cache, bounded by what its states really hold.

llama-cpp-python's ``LlamaRAMCache`` counts only each state's llama.cpp bytes against its capacity, but each saved
``LlamaState`` also carries a copy of the model's logits buffer: with ``logits_all`` (the server's default) a row of
``n_vocab`` floats per context token, 118 MB for a 600-token prompt of SmolLM2, else ``n_batch`` rows, 100 MB
whatever the prompt. A server with a 2 GiB cache thus grew past 19 GB before the counted bytes (14 MB for that
prompt) reached the cap. memevo's server runs without ``logits_all``; then that buffer is never written by decoding
nor read by sampling, so this cache keeps one row of it (``load_state`` broadcasts it back) and counts every byte a
state keeps, logits, token ids and llama.cpp state alike.
"""

from __future__ import annotations

from collections.abc import Sequence

from llama_cpp import LlamaRAMCache
from llama_cpp.llama import LlamaState


def state_bytes(state: LlamaState) -> int:
    """Memory one cached state holds: llama.cpp's state, the logits kept and the token ids."""
    return int(state.llama_state_size) + int(state.scores.nbytes) + int(state.input_ids.nbytes)


def slimmed(state: LlamaState) -> LlamaState:
    """``state`` with one row of logits instead of the whole unused buffer (an empty buffer stays empty)."""
    if len(state.scores) > 1:
        state.scores = state.scores[-1:].copy()
    return state


class BoundedStateCache(LlamaRAMCache):
    """A RAM prompt cache that evicts its least recently used states once everything they hold exceeds the capacity.

    Only for a model loaded without ``logits_all``: with it, the stored logits are real and must be kept whole.
    """

    @property
    def cache_size(self) -> int:
        return sum(state_bytes(state) for state in self.cache_state.values())

    def __setitem__(self, key: Sequence[int], value: LlamaState) -> None:
        super().__setitem__(key, slimmed(value))
