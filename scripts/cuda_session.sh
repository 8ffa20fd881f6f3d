#!/usr/bin/env bash
# One GPU session (docs/cuda.md): build luminal with the CUDA runtime on the GPU machine, run the
# CUDA tests, optionally a per-kernel profile (LUMINAL_CUDA_PROFILE_CONFIG), then the GPU benchmark
# (LUMINAL_CUDA_BENCH_CONFIGS, LUMINAL_CUDA_BENCH_ARGS such as "--paths eager luminal --iters 3";
# LUMINAL_CUDA_BENCH_TIMEOUT=0 skips it; LUMINAL_CUDA_TESTS=0 skips the tests; LUMINAL_CUDA_PREBUILT
# names an earlier call's _C.so.gz to use instead of building); logs and results go to $1
# (default: $OUT, the device tool's output folder). Each stage has a time limit, so a hang still leaves the logs of what came before.
# Libraries the machine's image lacks come from .gpu/debs (scripts/cuda_session_debs.sh), unpacked
# under /tmp, not over /.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:?usage: scripts/cuda_session.sh OUTPUT_DIR}}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
stamp() { echo "[$(date +%T)] $*"; }

{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c "import sys, torch, transformers; print(sys.version.split()[0], torch.__version__, torch.version.cuda, transformers.__version__)"
  echo "CXX=${CXX:-}"; g++ --version | head -1; cmake --version | head -1; nproc
} > "$out/env.txt" 2>&1

sysroot=/tmp/luminal-sysroot
if [ -d .gpu/debs ]; then
  lib=$sysroot/usr/lib/x86_64-linux-gnu
  for deb in .gpu/debs/*.deb; do
    case $deb in  # runtime libraries the image may already have in a newer version
      *libgfortran5_*) ldconfig -p | grep -q 'libgfortran.so.5 ' && continue ;;
      *libquadmath0_*) ldconfig -p | grep -q 'libquadmath.so.0 ' && continue ;;
      *pkgconf*) command -v pkg-config >/dev/null && continue ;;
    esac
    dpkg -x "$deb" "$sysroot"
  done
  ln -sf openblas-pthread/libopenblas.so "$lib/libopenblas.so"
  sed -i "s|^prefix=/usr|prefix=$sysroot/usr|" "$lib/pkgconfig/libzip.pc"
  export CMAKE_PREFIX_PATH=$sysroot/usr PKG_CONFIG_PATH=$lib/pkgconfig PATH=$PATH:$sysroot/usr/bin
  export LD_LIBRARY_PATH=$lib:$lib/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi

# torchao (docs/quantization.md) for the quantized GPU tests and configs, without the torch it asks for.
for wheel in .gpu/wheels/*.whl; do
  [ -e "$wheel" ] && python3 -m pip install -q --disable-pip-version-check --no-deps "$wheel" >> "$out/env.txt" 2>&1
done

if [ -n "${LUMINAL_CUDA_PREBUILT:-}" ]; then
  # An earlier call's $OUT/_C.so.gz, carried back (e.g. in .gpu/prebuilt): a second call of the
  # same session skips the minute the build takes. It must be the build of this very tree.
  stamp "prebuilt $LUMINAL_CUDA_PREBUILT"
  suffix=$(python3 -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
  gunzip -c "$LUMINAL_CUDA_PREBUILT" > "python/luminal/_C$suffix" || exit 1
  export PYTHONPATH=$PWD/python:$PWD${PYTHONPATH:+:$PYTHONPATH}
else
  stamp "build"
  # The image's CXX (/opt/gcc/bin/g++) links libstdc++ statically, and torch loads the shared one:
  # _C then crashes at its first stream output (cmake/check_shared_libstdcxx.cmake stops such a
  # build). Naming the shared library on the link line makes the linker take it first.
  export LDFLAGS="-Wl,--push-state,--no-as-needed $(g++ -print-file-name=libstdc++.so.6) -Wl,--pop-state"
  export CMAKE_BUILD_PARALLEL_LEVEL=$(nproc)
  if ! timeout 360 python3 -m pip install -v --disable-pip-version-check --no-build-isolation --no-deps -e . > "$out/build.log" 2>&1; then
    stamp "build failed"; grep -E "error|Error|FAILED" "$out/build.log" | head -40; tail -30 "$out/build.log"; exit 1
  fi
  # The extension, to inspect here (readelf -d, nm -D) when it misbehaves there.
  find build -name '_C*.so' -newer pyproject.toml -exec sh -c 'strip -o /tmp/_C.so "$1" && gzip -c /tmp/_C.so > "$2/_C.so.gz"' _ {} "$out" \;
fi
python3 -c "from luminal import _C; print('has_cuda', _C.has_cuda)" || exit 1

if [ "${LUMINAL_CUDA_TESTS:-1}" != 0 ]; then  # 0: a later call of a session that ran them
  stamp "tests/cuda"
  timeout 240 python3 -m pytest -q -rfE -p no:cacheprovider --timeout 120 tests/cuda/test_cuda_runtime.py tests/python/test_build_checks.py > "$out/tests.log" 2>&1
  stamp "tests exit $?"; tail -25 "$out/tests.log"
fi

if [ -n "${LUMINAL_CUDA_PROFILE_CONFIG:-}" ]; then  # per-kernel device time, luminal and inductor
  stamp "profile $LUMINAL_CUDA_PROFILE_CONFIG"
  timeout "${LUMINAL_CUDA_PROFILE_TIMEOUT:-200}" python3 benchmarks/cuda/kernel_profile.py \
    --config "$LUMINAL_CUDA_PROFILE_CONFIG" --out "$out" > "$out/profile.log" 2>&1
  stamp "profile exit $?"
fi

[ "${LUMINAL_CUDA_BENCH_TIMEOUT:-420}" = 0 ] && exit 0  # (timeout 0 would mean no limit)
stamp "benchmark"
timeout "${LUMINAL_CUDA_BENCH_TIMEOUT:-420}" python3 benchmarks/cuda/run.py --timeout 150 --out "$out" ${LUMINAL_CUDA_BENCH_CONFIGS:+--configs $LUMINAL_CUDA_BENCH_CONFIGS} ${LUMINAL_CUDA_BENCH_ARGS:-} 2> "$out/bench.log"
stamp "benchmark exit $?"
