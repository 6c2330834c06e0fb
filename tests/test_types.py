"""The package type-checks: mypy with the pydantic plugin over memevo.core, .agents, .environments and .evolve.

The folders install under the ``memevo`` namespace through setup.py's mapping, which mypy cannot read from an
editable install, so the test lays the four folders out under a ``memevo/`` of symlinks and checks that.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = {"core": "agents/core", "agents": "agents", "environments": "environments", "evolve": "evolve"}


def test_mypy_finds_no_errors(tmp_path: Path) -> None:
    namespace = tmp_path / "memevo"
    namespace.mkdir()
    for package, folder in PACKAGES.items():
        (namespace / package).symlink_to(REPO / folder, target_is_directory=True)
    (namespace / "__init__.py").symlink_to(REPO / "evolve" / "package_root" / "__init__.py")  # the memevo package
    command = [sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"),
               "--cache-dir", str(REPO / ".mypy_cache"), "-p", "memevo"]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, f"mypy found errors:\n{result.stdout}{result.stderr}"
