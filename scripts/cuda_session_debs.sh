#!/usr/bin/env bash
# Fetches, here, the Debian packages a GPU machine's image lacks for building luminal (libzip,
# nlohmann-json, OpenBLAS and their runtime libraries, pkgconf) into .gpu/debs, which the device
# tool carries there (carry: [".gpu"]) and scripts/cuda_session.sh unpacks, and torchao's wheel into
# .gpu/wheels. See docs/cuda.md.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .gpu/debs
cd .gpu/debs
apt-get download libzip-dev libzip4 nlohmann-json3-dev libopenblas-dev libopenblas-pthread-dev \
  libopenblas0-pthread libopenblas0 libgfortran5 libquadmath0 pkgconf pkgconf-bin libpkgconf3
# torchao's wheel, pinned as scripts/install_deps.sh pins it; the session installs it with --no-deps.
mkdir -p ../wheels
python3 -m pip download -q --disable-pip-version-check --no-deps -d ../wheels torchao==0.18.0
