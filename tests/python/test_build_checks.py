"""The build's guard against a static libstdc++ in luminal._C (cmake/check_shared_libstdcxx.cmake).

A GPU machine's compiler linked libstdc++ into _C statically; torch loads the shared one, and _C
crashed at its first stream output (docs/lessons.md, 2026-11-26). The guard runs after the link;
here it is run on two small shared libraries, one linked each way."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
CHECK = REPO_ROOT / "cmake" / "check_shared_libstdcxx.cmake"

pytestmark = pytest.mark.skipif(
    not (shutil.which("g++") and shutil.which("cmake") and shutil.which("readelf")), reason="needs g++, cmake, readelf"
)


def _library(tmp_path: Path, static_libstdcxx: bool) -> Path:
    source = tmp_path / "prints.cpp"
    source.write_text("#include <iostream>\nvoid prints() { std::cout << 42ul; }\n")
    library = tmp_path / ("libstatic.so" if static_libstdcxx else "libshared.so")
    flags = ["-static-libstdc++"] if static_libstdcxx else []
    subprocess.run(["g++", "-shared", "-fPIC", *flags, str(source), "-o", str(library)], check=True)
    return library


def _check(library: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["cmake", f"-DMODULE={library}", f"-DREADELF={shutil.which('readelf')}", "-DCOMPILER=g++", "-P", str(CHECK)],
        capture_output=True,
        text=True,
    )


def test_a_module_that_needs_the_shared_libstdcxx_passes(tmp_path):
    library = _library(tmp_path, static_libstdcxx=False)
    assert _check(library).returncode == 0
    assert library.exists()


def test_a_module_with_a_static_libstdcxx_fails_the_build_and_is_removed(tmp_path):
    library = _library(tmp_path, static_libstdcxx=True)
    result = _check(library)
    assert result.returncode != 0
    assert "static copy of libstdc++" in result.stderr and "LDFLAGS=" in result.stderr
    assert not library.exists()
