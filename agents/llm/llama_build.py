"""A llama-cpp-python build that runs on every x86-64 CPU, and the check that the installed one does.

llama-cpp-python ships only as source on PyPI and compiles llama.cpp with the build machine's native
instruction set. Built that way on a CPU with AVX-512/AMX, its server crashed (SIGSEGV in
libggml-cpu) on every prompt longer than one token, and a native wheel is not portable to a CPU without
those features anyway. memevo therefore builds it with ``GGML_NATIVE=OFF`` and an explicit feature level
that this CPU has (AVX2+FMA+F16C where present, else AVX, else the x86-64 baseline), into a wheel
folder of its own keyed by version and flags, never through pip's wheel cache (which may hold a native
build of the same version).

Run as a script with only the standard library, before memevo itself is installed (the Makefile does):
``python agents/llm/llama_build.py wheel --version 0.3.36`` builds (once) and prints the wheel folder, which
pip then takes with ``--find-links FOLDER --only-binary llama-cpp-python`` (so no source build, and no
wheel from pip's cache, can stand in for it); ``install`` force-reinstalls that wheel into a working
environment (the repair); ``check`` fails if the installed build has AVX-512/AMX code paths.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

AVX2_LEVEL = ("avx", "avx2", "fma", "f16c")
LEAN_BUILD = ("-DLLAVA_BUILD=OFF",)
"""Parts memevo never loads (the multimodal library, mtmd): left out, the first install compiles much less."""
FORBIDDEN_FEATURES = ("AVX512", "AMX")
"""System-info features a portable build must not report: the code paths that crashed."""


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """The CPU feature flags of the first core (empty where /proc/cpuinfo does not exist)."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return frozenset()
    match = re.search(r"^flags\s*:\s*(.*)$", text, flags=re.MULTILINE)
    return frozenset(match.group(1).split()) if match else frozenset()


def portable_cmake_args(flags: frozenset[str]) -> str:
    """CMake arguments for a build that uses at most AVX2, and only the features ``flags`` include."""
    enabled = AVX2_LEVEL if set(AVX2_LEVEL) <= flags else ("avx",) if "avx" in flags else ()
    options = ["-DGGML_NATIVE=OFF", *(f"-DGGML_{feature.upper()}=ON" for feature in enabled)]
    options += [f"-DGGML_{feature.upper()}=OFF" for feature in AVX2_LEVEL if feature not in enabled]
    return " ".join([*options, *LEAN_BUILD])


def reinstall_command(version: str, flags: frozenset[str] | None = None) -> str:
    """The shell command that replaces the installed llama-cpp-python by a portable build."""
    cmake_args = portable_cmake_args(cpu_flags() if flags is None else flags)
    return (
        f'CMAKE_ARGS="{cmake_args}" {sys.executable} -m pip install --force-reinstall --no-deps '
        f"--no-cache-dir --no-binary llama-cpp-python llama-cpp-python=={version}"
    )


def forbidden_features(system_info: str) -> list[str]:
    """Features of ``FORBIDDEN_FEATURES`` that llama.cpp's system info reports as compiled in (``X = 1``)."""
    enabled = re.findall(r"([A-Z0-9_]+)\s*=\s*1", system_info)
    return sorted({name for name in enabled if name.startswith(FORBIDDEN_FEATURES)})


def installed_system_info() -> str:
    """``llama_print_system_info()`` of the installed llama-cpp-python."""
    import llama_cpp

    raw = llama_cpp.llama_print_system_info()
    return raw.decode() if isinstance(raw, bytes) else str(raw)


def build_wheel(version: str, wheelhouse: Path, flags: frozenset[str]) -> Path:
    """A portable wheel of llama-cpp-python ``version``, built once per flag set into ``wheelhouse``."""
    cmake_args = portable_cmake_args(flags)
    tag = hashlib.sha256(cmake_args.encode()).hexdigest()[:12]
    folder = wheelhouse / f"llama-cpp-python-{version}-{tag}"
    found = sorted(folder.glob(f"llama_cpp_python-{version}-*.whl"))
    if found:
        return found[0]
    folder.mkdir(parents=True, exist_ok=True)
    print(f"building llama-cpp-python {version} with CMAKE_ARGS={cmake_args!r} (a few minutes)", file=sys.stderr)
    command = [sys.executable, "-m", "pip", "wheel", "--no-cache-dir", "--no-deps", "--no-binary", "llama-cpp-python"]
    subprocess.run(  # pip's own output goes to stderr: stdout carries only the folder for the Makefile
        [*command, "-w", str(folder), f"llama-cpp-python=={version}"],
        check=True,
        env={**os.environ, "CMAKE_ARGS": cmake_args, "FORCE_CMAKE": "1"},
        stdout=sys.stderr,
    )
    found = sorted(folder.glob(f"llama_cpp_python-{version}-*.whl"))
    if not found:
        raise SystemExit(f"pip built no wheel of llama-cpp-python {version} in {folder}")
    return found[0]


def _install(version: str, wheelhouse: Path) -> int:
    wheel = build_wheel(version, wheelhouse, cpu_flags())
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--force-reinstall", "--no-cache-dir", str(wheel)]
    )
    return installed.returncode


def _check() -> int:
    found = forbidden_features(installed_system_info())
    if found:
        from llama_cpp import __version__

        print(f"llama-cpp-python was built with {', '.join(found)}; it crashes on some CPUs and fails on CPUs "
              f"without them. Rebuild it portably:\n  {reinstall_command(__version__)}", file=sys.stderr)  # fmt: skip
        return 1
    print("llama-cpp-python: portable build (no AVX-512/AMX code paths)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name, purpose in (("wheel", "build (once) a portable wheel and print its folder"),
                          ("install", "build (once) and force-reinstall the portable wheel (the repair)")):
        command = commands.add_parser(name, help=purpose)
        command.add_argument("--version", required=True)
        command.add_argument("--wheelhouse", type=Path, default=Path.home() / ".cache" / "memevo" / "wheels")
    commands.add_parser("check", help="exit 1 if the installed llama-cpp-python has AVX-512/AMX code paths")
    commands.add_parser("cmake-args", help="print the portable CMAKE_ARGS for this CPU")
    args = parser.parse_args(argv)
    if args.command == "wheel":
        print(build_wheel(args.version, args.wheelhouse, cpu_flags()).parent)
        return 0
    if args.command == "install":
        return _install(args.version, args.wheelhouse)
    if args.command == "check":
        return _check()
    print(portable_cmake_args(cpu_flags()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
