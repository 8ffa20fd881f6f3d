#!/usr/bin/env bash
# README command (b): every test. C++ tests (plain, then under ASan+UBSan), a short fuzz run of
# the PT2 reader, then pytest against the installed package (rebuilt incrementally first), one
# pytest worker per core (pytest-xdist, a test file per worker) with a per-test time limit, so a
# hung test fails by name with every thread's stack instead of running CI past its limit.
# FUZZ_SECONDS (default 60) bounds the fuzz run; PYTEST_ARGS are passed to pytest after ours
# (`PYTEST_ARGS="-n 0"` runs the tests in one process).
# Tests marked `slow` (the OpInfo sweep, the NVRTC sweep over every model family, 1,000 compile cycles)
# run only with --slow.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
marker="not slow"
if [[ "${1:-}" == "--slow" ]]; then marker="slow"; fi

echo "== C++ tests"
cmake -S . -B build/cpp -G Ninja -DLUMINAL_PYTHON=OFF -DLUMINAL_TESTS=ON >/dev/null
cmake --build build/cpp -j "$jobs"
# The NVRTC tests use pip's NVRTC where installed (the Python module finds it by itself); not
# under the sanitizers, which would report NVRTC's own allocations.
nvrtc=$(python3 -c "import glob, nvidia; print(''.join(glob.glob(nvidia.__path__[0] + '/cu13/lib/libnvrtc.so.13')[:1]))" \
  2>/dev/null || true)
LUMINAL_NVRTC_PATH="${LUMINAL_NVRTC_PATH:-$nvrtc}" ctest --test-dir build/cpp --output-on-failure -j "$jobs"

echo "== C++ tests under ASan + UBSan"
# -O1 and line tables only (-g1): what the sanitizers' reports need, at half the build time of
# -O2 -g (12 -> 6 minutes on 2 cores; the sanitized build was CI's largest step after pytest).
cmake -S . -B build/cpp-asan -G Ninja -DLUMINAL_PYTHON=OFF -DLUMINAL_TESTS=ON -DLUMINAL_SANITIZE=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" >/dev/null
cmake --build build/cpp-asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1 ctest --test-dir build/cpp-asan --output-on-failure -j "$jobs"

echo "== fuzzing the PT2 reader and the compile path for ${FUZZ_SECONDS:-60} s each"
tests/fuzz/run_fuzz.sh "${FUZZ_SECONDS:-60}"

echo "== Python tests"
scripts/build.sh
# --dist loadfile: a file's tests share one process (module fixtures, compile counts). The limit
# is per test (the slowest takes about 6 minutes on 2 cores); past it the worker prints every
# thread's stack and exits, and is not replaced: xdist would run the hung test again in the new
# worker, and again, each time for the whole limit. --durations names the slowest tests in CI's
# log: its wall time is part of green (docs/lessons.md, 2026-12-02).
python3 -m pytest -q -m "$marker" -n "$jobs" --dist loadfile --max-worker-restart 0 \
  --timeout 1800 --timeout-method thread --durations 25 ${PYTEST_ARGS:-} tests
