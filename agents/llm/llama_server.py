"""The embedded model's server: llama-cpp-python's OpenAI-compatible server plus one route that scores options.

Likelihood answers need the log-probability of each option's text as the assistant's reply to a chat.
llama-cpp-python's own way, ``/v1/completions`` with ``echo`` and ``logprobs``, needs the model loaded with
``logits_all`` (a row of the whole vocabulary kept for every context token: n_ctx x n_vocab floats, 1.6 GB for
SmolLM2 at 8192 tokens) and then sorts the vocabulary in Python for every prompt token it echoes, which takes
seconds per request on the prompts memevo sends. The route added here (``OPTION_LOGPROBS_PATH``) asks llama.cpp
for logits at the option tokens only, reuses the chat already in the model's context (each option after the
first costs its own tokens), and runs under the server's own lock, so it is one request among the others.

Embeddings (``/v1/embeddings``) come from a second llama.cpp context on the same GGUF file, made for them (mean
pooling over the whole text, which a chat context does not do) and loaded at the first embeddings request, so runs
that never embed pay nothing; the file is memory-mapped, so the weights are not held twice.

Run as ``python -m memevo.agents.llm.llama_server`` with llama-cpp-python's server arguments.
"""

from __future__ import annotations

import contextlib
import functools
import math
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from llama_cpp import Llama

EMBEDDINGS_PATH = "/v1/embeddings"
EMBEDDING_N_CTX = 2048
"""Tokens embedded per text; longer texts are cut to their first ``EMBEDDING_N_CTX`` tokens."""
OPTION_LOGPROBS_PATH = "/v1/memevo/option_logprobs"
"""Relative to the server root; the gateway posts ``{"model", "messages", "options"}`` here."""


def chat_prompt_tokens(llama: Llama, messages: list[dict[str, str]]) -> list[int]:
    """The tokens the chat endpoint feeds the model for ``messages``, up to the assistant's turn: the model's own
    chat template from the GGUF file, rendered and tokenized as llama-cpp-python's chat handler does."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    template = llama.metadata.get("tokenizer.chat_template")
    if llama.chat_format != "chat_template.default" or not template:
        raise ValueError(f"option scoring needs the model's own chat template (this model uses {llama.chat_format})")
    vocabulary = llama._model  # noqa: SLF001 - the token texts the chat handler also reads
    formatter = Jinja2ChatFormatter(template=template, eos_token=vocabulary.token_get_text(llama.token_eos()),
                                    bos_token=vocabulary.token_get_text(llama.token_bos()))
    rendered = formatter(messages=cast(Any, messages))  # plain role/content dicts: the formatter reads only those
    return llama.tokenize(rendered.prompt.encode("utf-8"), add_bos=not rendered.added_special, special=True)


def continuation_logprob(llama: Llama, context: Sequence[int], continuation: Sequence[int]) -> float:
    """Sum of log P(continuation token | everything before it), reusing whatever prefix of ``context`` the model
    has evaluated already; logits are asked for only where they predict a continuation token."""
    import numpy as np

    tokens = [*context, *continuation]
    if len(tokens) > llama.n_ctx():
        raise ValueError(f"context and option need {len(tokens)} tokens, over the context window of {llama.n_ctx()}")
    evaluated = llama.input_ids[: llama.n_tokens].tolist()
    kept = next((i for i, (a, b) in enumerate(zip(evaluated, context, strict=False)) if a != b),
                min(len(evaluated), len(context)))
    start = min(kept, len(context) - 1)  # the last context token is decoded again: its logits predict the first
    ctx, batch = llama._ctx, llama._batch  # noqa: SLF001 - the decode loop of Llama.eval, with chosen logits rows
    ctx.kv_cache_seq_rm(-1, start, -1)
    llama.n_tokens = start
    llama._requires_eval = True  # noqa: SLF001 - the next chat must decode again before it samples
    total = 0.0
    for first in range(start, len(tokens), llama.n_batch):
        chunk = tokens[first : first + llama.n_batch]
        batch.set_batch(batch=chunk, n_past=first, logits_all=False)
        wanted = [j for j in range(len(chunk)) if len(context) - 1 <= first + j < len(tokens) - 1]
        for j in range(len(chunk)):
            batch.batch.logits[j] = j in wanted
        ctx.decode(batch)
        llama.input_ids[first : first + len(chunk)] = chunk
        llama.n_tokens = first + len(chunk)
        for j in wanted:
            row = np.ctypeslib.as_array(ctx.get_logits_ith(j), shape=(llama.n_vocab(),)).astype(np.float64)
            peak = float(row.max())
            total += float(row[tokens[first + j + 1]]) - peak - math.log(float(np.exp(row - peak).sum()))
    return total


def option_logprobs(llama: Llama, messages: list[dict[str, str]], options: list[str]) -> dict[str, Any]:
    """The reply of ``OPTION_LOGPROBS_PATH``: each option's summed log-probability and token count."""
    context = chat_prompt_tokens(llama, messages)
    scored = []
    for option in options:
        continuation = llama.tokenize(option.encode("utf-8"), add_bos=False, special=False)
        if not continuation:
            raise ValueError("an option with no text cannot be scored")
        scored.append({"logprob": continuation_logprob(llama, context, continuation), "tokens": len(continuation)})
    return {"options": scored, "usage": {"prompt_tokens": len(context), "completion_tokens": 0}}


def add_option_route(app: Any) -> None:
    """Add ``OPTION_LOGPROBS_PATH`` to llama-cpp-python's app, behind its authentication and its model lock."""
    from fastapi import Body, Depends, HTTPException
    from llama_cpp.server.app import authenticate, get_llama_proxy
    from starlette.concurrency import run_in_threadpool

    @app.post(OPTION_LOGPROBS_PATH, dependencies=[Depends(authenticate)])
    async def score_options(body: dict[str, Any] = Body(...)) -> dict[str, Any]:  # noqa: B008 - FastAPI's idiom
        messages, options = body.get("messages"), body.get("options")
        if not isinstance(messages, list) or not isinstance(options, list) or not options:
            raise HTTPException(status_code=400, detail="give 'messages' (a chat) and 'options' (a list of texts)")
        async with contextlib.asynccontextmanager(get_llama_proxy)() as proxy:
            llama = proxy(body.get("model"))
            try:
                scores = await run_in_threadpool(option_logprobs, llama, messages, [str(o) for o in options])
            except ValueError as error:
                raise HTTPException(status_code=400, detail=str(error)) from error
        return {"model": body.get("model"), **scores}


class Embedder:
    """The embeddings context, loaded once on first use, serving one request at a time."""

    def __init__(self, model_path: str, n_threads: int | None) -> None:
        self.model_path = model_path
        self.n_threads = n_threads
        self._lock = threading.Lock()

    @functools.cached_property
    def _llama(self) -> Llama:
        import llama_cpp

        return llama_cpp.Llama(model_path=self.model_path, embedding=True, n_ctx=EMBEDDING_N_CTX,
                               n_batch=EMBEDDING_N_CTX, n_ubatch=EMBEDDING_N_CTX, n_threads=self.n_threads,
                               pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN, verbose=False)

    def __call__(self, texts: list[str], model: str) -> dict[str, Any]:
        """OpenAI's embeddings reply for ``texts``, in order, with the tokens read."""
        with self._lock:
            return dict(self._llama.create_embedding(texts, model=model))


def add_embeddings_route(app: Any, embedder: Embedder) -> None:
    """Serve ``EMBEDDINGS_PATH`` from ``embedder`` instead of the chat model (whose context pools nothing)."""
    from fastapi import Body, Depends, HTTPException
    from llama_cpp.server.app import authenticate
    from starlette.concurrency import run_in_threadpool

    from memevo.agents.llm.config import LOCAL_EMBEDDING_MODEL


    @app.post(EMBEDDINGS_PATH, dependencies=[Depends(authenticate)])
    async def create_embedding(body: dict[str, Any] = Body(...)) -> dict[str, Any]:  # noqa: B008 - FastAPI's idiom
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else texts
        if not isinstance(texts, list) or not texts or not all(isinstance(text, str) for text in texts):
            raise HTTPException(status_code=400, detail="give 'input': a text or a list of texts")
        model = str(body.get("model") or LOCAL_EMBEDDING_MODEL)
        if model != LOCAL_EMBEDDING_MODEL:
            raise HTTPException(status_code=400, detail=f"this server embeds with '{LOCAL_EMBEDDING_MODEL}' only")
        return await run_in_threadpool(embedder, texts, model)

    app.router.routes.insert(0, app.router.routes.pop())  # before llama-cpp-python's own route, which answers first


def bound_prompt_cache(capacity_bytes: int) -> None:
    """Give the loaded model a prompt cache that counts all its states hold (see ``state_cache``)."""
    from llama_cpp.server import app as server_app

    from memevo.agents.llm.state_cache import BoundedStateCache

    proxy = server_app._llama_proxy  # noqa: SLF001 - create_app loads the one model into this proxy
    if proxy is None:
        raise RuntimeError("llama-cpp-python's server loaded no model")
    proxy().set_cache(BoundedStateCache(capacity_bytes))


def main() -> None:
    """llama-cpp-python's ``python -m llama_cpp.server``, with the option route added."""
    import argparse

    import uvicorn
    from llama_cpp.server.app import create_app
    from llama_cpp.server.cli import add_args_from_model, parse_model_from_args
    from llama_cpp.server.settings import ModelSettings, ServerSettings, Settings

    parser = argparse.ArgumentParser(description="memevo's embedded llama.cpp server")
    add_args_from_model(parser, Settings)
    args = parser.parse_args()
    # llama-cpp-python annotates this helper as returning its argument (the class), but it returns an instance
    server_settings = cast(ServerSettings, parse_model_from_args(ServerSettings, args))
    model_settings = cast(ModelSettings, parse_model_from_args(ModelSettings, args))
    app = create_app(server_settings=server_settings, model_settings=[model_settings])
    if model_settings.cache and model_settings.cache_type == "ram" and not model_settings.logits_all:
        bound_prompt_cache(model_settings.cache_size)
    add_option_route(app)
    add_embeddings_route(app, Embedder(model_settings.model, model_settings.n_threads))
    uvicorn.run(app, host=server_settings.host, port=server_settings.port, log_level="warning")


if __name__ == "__main__":
    main()
