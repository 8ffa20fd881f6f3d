#!/usr/bin/env bash
# Builds and installs luminal into the current Python (editable: python/ is used in place).
# Incremental: the CMake build directory under build/ is kept between runs.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps -e .
