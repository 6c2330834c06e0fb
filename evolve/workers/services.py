"""A throwaway PostgreSQL cluster and an MLflow tracking server, started and stopped by the project itself.

Workers on several machines share one database and one tracking server; tests, benchmarks and a first try need
both without an administrator. ``PostgresCluster`` makes a cluster in a fresh folder on a local port (as the
``postgres`` user when run as root: PostgreSQL refuses root) with one database per store, since MLflow and Optuna
both keep an ``alembic_version`` table. ``MlflowServer`` serves MLflow with that PostgreSQL as its backend store
and a local artifact folder. ``python -m memevo.evolve.workers.services`` starts both, prints their URLs and
stops them on Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from types import TracebackType

from memevo.evolve.process_group import stop_group

POSTGRES_USER = "postgres"
"""The system account that runs the cluster when memevo runs as root (Debian's package creates it)."""
DATABASE_USER = "memevo"
DATABASES = ("memevo", "mlflow")
"""``memevo``: work claims, rate limits and the Optuna study; ``mlflow``: the tracking server's backend store."""


class ServiceError(RuntimeError):
    """A service did not start or stop; the message names its log file."""


def postgres_bin() -> Path | None:
    """The folder holding ``initdb``, ``pg_ctl`` and ``postgres`` (None when PostgreSQL is not installed)."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).resolve().parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda path: int(path.parts[-3]))
    return versions[-1].parent if versions else None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _as_cluster_owner() -> list[str]:
    """The prefix that runs a PostgreSQL program as a user it accepts."""
    return ["runuser", "-u", POSTGRES_USER, "--"] if os.geteuid() == 0 else []


class PostgresCluster:
    """A cluster in its own temporary folder, trusting local connections; ``url(database)`` is its SQLAlchemy URL."""

    def __init__(self, port: int | None = None, *, start_timeout_s: float = 60.0) -> None:
        binaries = postgres_bin()
        if binaries is None:
            raise ServiceError("PostgreSQL is not installed (no initdb): apt-get install postgresql "
                               "(or run .ci/services.sh)")
        self.bin = binaries
        self.port = port or free_port()
        self.start_timeout_s = start_timeout_s
        self.folder = Path(tempfile.mkdtemp(prefix="memevo-pg-"))
        self.data = self.folder / "data"
        self.log = self.folder / "postgres.log"

    def url(self, database: str = "memevo") -> str:
        return f"postgresql+psycopg://{DATABASE_USER}@127.0.0.1:{self.port}/{database}"

    def start(self) -> PostgresCluster:
        if os.geteuid() == 0:
            account = pwd.getpwnam(POSTGRES_USER)
            os.chown(self.folder, account.pw_uid, account.pw_gid)
        self._run("initdb", "-D", str(self.data), "-U", DATABASE_USER, "--auth=trust", "-E", "UTF8", "--no-sync")
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-t",
                  str(int(self.start_timeout_s)), "-w", "start")
        self._create_databases()
        return self

    def stop(self) -> None:
        """Stop the server (fast shutdown: open sessions are ended) and remove its folder."""
        if (self.data / "postmaster.pid").exists():
            self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        shutil.rmtree(self.folder, ignore_errors=True)

    def _create_databases(self) -> None:
        import psycopg

        with psycopg.connect(host="127.0.0.1", port=self.port, user=DATABASE_USER, dbname="postgres",
                             autocommit=True) as connection:
            for name in DATABASES:
                connection.execute(f'CREATE DATABASE "{name}"')

    def _run(self, program: str, *args: str) -> None:
        command = [*_as_cluster_owner(), str(self.bin / program), *args]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise ServiceError(f"{program} failed (exit {done.returncode}): {' | '.join(tail)}; log: {self.log}")

    def __enter__(self) -> PostgresCluster:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self.stop()


class MlflowServer:
    """``mlflow server`` on ``backend_url`` with artifacts under ``artifacts``; ``url`` is its tracking URI."""

    def __init__(self, backend_url: str, artifacts: Path, port: int | None = None, *,
                 start_timeout_s: float = 120.0) -> None:
        self.backend_url = backend_url
        self.artifacts = artifacts
        self.port = port or free_port()
        self.start_timeout_s = start_timeout_s
        self.log = artifacts.parent / f"mlflow-server-{self.port}.log"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> MlflowServer:
        self.artifacts.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", self.backend_url,
                   "--artifacts-destination", str(self.artifacts), "--host", "127.0.0.1", "--port", str(self.port),
                   "--workers", "2"]
        environment = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "1"}
        with self.log.open("wb") as log:
            self._process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environment,
                                             start_new_session=True)
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise ServiceError(f"mlflow server exited with {self._process.returncode}; log: {self.log}")
            if self._healthy():
                return self
            time.sleep(0.3)
        self.stop()
        raise ServiceError(f"mlflow server did not answer within {self.start_timeout_s:.0f} s; log: {self.log}")

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=2) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    def stop(self) -> None:
        """SIGTERM to the server's process group (its web workers too), SIGKILL after 20 s."""
        process, self._process = self._process, None
        if process is not None:
            stop_group(process, grace_s=20)

    def __enter__(self) -> MlflowServer:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Start a throwaway PostgreSQL and an MLflow server on it; "
                                     "Ctrl-C stops both.")
    parser.add_argument("--artifacts", type=Path, default=Path("mlartifacts"), help="MLflow artifact folder")
    parser.add_argument("--postgres-port", type=int, default=None)
    parser.add_argument("--mlflow-port", type=int, default=None)
    args = parser.parse_args(argv)
    stopping: list[int] = []
    signal.signal(signal.SIGTERM, lambda number, frame: stopping.append(number))
    try:
        with PostgresCluster(args.postgres_port) as cluster, \
                MlflowServer(cluster.url("mlflow"), args.artifacts.resolve(), args.mlflow_port) as server:
            print(f"MEMEVO_STORE={cluster.url('memevo')}")
            print(f"MLFLOW_TRACKING_URI={server.url}", flush=True)
            while not stopping:
                time.sleep(0.5)
    except ServiceError as error:
        print(f"memevo services: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
