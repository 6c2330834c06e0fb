"""The portable llama.cpp build: flags chosen from the CPU, and the check that nothing AVX-512/AMX got in."""

from __future__ import annotations

from pathlib import Path

import pytest

from memevo.agents.llm.llama_build import cpu_flags, forbidden_features, portable_cmake_args, reinstall_command

AVX2_MACHINE = frozenset({"sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "amx_tile"})


def test_flags_never_go_past_avx2_even_on_an_avx512_amx_cpu():
    args = portable_cmake_args(AVX2_MACHINE)
    assert args == "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAVA_BUILD=OFF"
    assert "512" not in args and "AMX" not in args


def test_older_cpus_get_a_lower_level():
    assert portable_cmake_args(frozenset({"avx", "sse4_2"})) == (
        "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=OFF -DGGML_FMA=OFF -DGGML_F16C=OFF -DLLAVA_BUILD=OFF"
    )
    assert portable_cmake_args(frozenset()).startswith("-DGGML_NATIVE=OFF -DGGML_AVX=OFF")


def test_cpu_flags_are_read_from_cpuinfo(tmp_path: Path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu avx avx2 fma\n\nprocessor\t: 1\nflags\t\t: fpu\n")
    assert cpu_flags(cpuinfo) == {"fpu", "avx", "avx2", "fma"}
    assert cpu_flags(tmp_path / "absent") == frozenset()


@pytest.mark.parametrize(
    ("info", "found"),
    [
        ("CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | LLAMAFILE = 1 | OPENMP = 1 |", []),
        ("CPU : AVX2 = 1 | AVX512 = 1 | AVX512_VNNI = 1 | AMX_INT8 = 1 |", ["AMX_INT8", "AVX512", "AVX512_VNNI"]),
        ("CPU : AVX512 = 0 | AMX_INT8 = 0 |", []),
    ],
)
def test_forbidden_features_are_those_compiled_in(info, found):
    assert forbidden_features(info) == found


def test_the_reinstall_command_never_uses_pip_caches():
    command = reinstall_command("0.3.36", frozenset({"avx", "avx2", "fma", "f16c"}))
    assert "--no-cache-dir" in command and "--no-binary llama-cpp-python" in command
    assert command.startswith('CMAKE_ARGS="-DGGML_NATIVE=OFF') and "llama-cpp-python==0.3.36" in command
