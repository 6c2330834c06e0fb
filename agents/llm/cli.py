"""``memevo llm serve`` and ``memevo llm check``: run the embedded model, and prove an endpoint works."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic import ValidationError

from memevo.agents.llm.accounting import dollars_text
from memevo.agents.llm.config import LOCAL_MODEL_NAME, LLMConfig
from memevo.agents.llm.local_server import CACHE_ENV, DEFAULT_CACHE_MB, DEFAULT_N_CTX, LocalModelServer
from memevo.agents.llm.protocol import ChatReply, LLMError
from memevo.core.errors import RunFailedError, UserInputError

if TYPE_CHECKING:
    from memevo.agents.llm.hub import LLMHub

app = typer.Typer(help="Serve the embedded local model and check LLM endpoints.", no_args_is_help=True)

CHECK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "country": {"type": "string"}},
    "required": ["city", "country"],
}


@app.command()
def serve(
    n_ctx: Annotated[int, typer.Option(min=512, help="Context window in tokens.")] = DEFAULT_N_CTX,
    n_threads: Annotated[int | None, typer.Option(min=1, help="CPU threads (default: $MEMEVO_LLAMA_THREADS, else every core).")] = None,
    cache_mb: Annotated[int | None, typer.Option(min=0, help=f"Megabytes of prompt states kept (default: ${CACHE_ENV}, else {DEFAULT_CACHE_MB}; 0: none).")] = None,
    port: Annotated[int | None, typer.Option(min=1, max=65535, help="Port (default: a free one).")] = None,
) -> None:
    """Start SmolLM2-135M-Instruct behind an OpenAI-compatible API on 127.0.0.1 until Ctrl-C."""
    signal.signal(signal.SIGTERM, _interrupt)  # `kill` stops the model server too, like Ctrl-C
    with LocalModelServer(n_ctx=n_ctx, n_threads=n_threads, cache_mb=cache_mb, port=port) as server:
        print(server.url, flush=True)
        typer.echo(f"serving {LOCAL_MODEL_NAME}; use it with: export OPENAI_BASE_URL={server.url}", err=True)
        try:
            while server.running:
                time.sleep(0.5)
        except KeyboardInterrupt:
            typer.echo("stopping", err=True)
            return
        raise RunFailedError(f"the local model server stopped unexpectedly:\n{server.log_tail()}")


@app.command()
def check(
    base_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible /v1 URL (default: OPENAI_BASE_URL, else the local model).")
    ] = None,
    model: Annotated[
        str | None, typer.Option(help="Model name at the endpoint (default: MEMEVO_MODEL, else the local model).")
    ] = None,
    max_tokens: Annotated[int, typer.Option(min=1, help="Completion token limit per request.")] = 64,
    timeout_s: Annotated[float, typer.Option(min=0.1, help="Per-request timeout in seconds.")] = 120.0,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the response cache.")] = False,
    cache_dir: Annotated[Path | None, typer.Option(help="Response cache folder.")] = None,
) -> None:
    """Send one chat request and one JSON request (with a schema); print model, latency and tokens."""
    try:
        chosen = {"model": model} if model else {}
        config = LLMConfig(**chosen, base_url=base_url, max_tokens=max_tokens, timeout_s=timeout_s)
    except ValidationError as error:
        first = error.errors()[0]
        raise UserInputError(first["msg"], source="command line", field=".".join(map(str, first["loc"]))) from None
    from memevo.agents.llm.hub import LLMHub  # the HTTP client stack loads only when a command runs

    with LLMHub(cache_dir=cache_dir, use_cache=not no_cache) as hub:
        try:
            asyncio.run(_check(hub, config))
        except LLMError as error:
            raise RunFailedError(str(error)) from error
        total = hub.accounting.report().total()
        typer.echo(f"total: {total.calls} calls, {total.prompt_tokens}+{total.completion_tokens} tokens, {dollars_text(total)}")


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


async def _check(hub: LLMHub, config: LLMConfig) -> None:
    client = hub.client(config)
    typer.echo(f"endpoint: {client.base_url}")
    try:
        reply = await client.chat(
            [{"role": "user", "content": "What is the capital of France? Answer in one sentence."}], role="judge"
        )
        _show("chat", reply, reply.text)
        parsed, reply = await client.chat_json(
            [{"role": "user", "content": "Name the capital of France and its country as JSON."}],
            role="judge",
            json_schema=CHECK_SCHEMA,
        )
        _show("json", reply, json.dumps(parsed))
    finally:
        await client.aclose()


def _show(kind: str, reply: ChatReply, content: str) -> None:
    source = "cache" if reply.cached else "endpoint"
    typer.echo(
        f"{kind}: model={reply.model} latency={reply.latency_s:.2f}s prompt_tokens={reply.prompt_tokens} "
        f"completion_tokens={reply.completion_tokens} from={source}\n  {content}"
    )
