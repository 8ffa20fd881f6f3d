#!/usr/bin/env bash
# Builds the PT2 reader fuzzers and the compile-path fuzzer in build-fuzz/ and runs each for N
# seconds (default 60). Seeds: the fixtures (whole archives) and their models/model.json (for the
# JSON fuzzer).
# Crashing inputs land in build-fuzz/fuzz-artifacts/; the script exits non-zero on a finding.
set -euo pipefail

seconds="${1:-60}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/build-fuzz"
fixtures="$root/tests/pt2/fixtures"

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++ -DLUMINAL_FUZZ=ON -DLUMINAL_TESTS=OFF -DLUMINAL_PYTHON=OFF
cmake --build "$build" -j2 --target fuzz_pt2_reader fuzz_pt2_json fuzz_compile

corpus="$build/fuzz-corpus"
artifacts="$build/fuzz-artifacts"
mkdir -p "$corpus/reader" "$corpus/json" "$corpus/compile" "$artifacts"
cp "$fixtures"/*.pt2 "$corpus/reader/"
for archive in "$fixtures"/*.pt2; do
  stem="$(basename "$archive" .pt2)"
  # The Llama JSON (~700 KB) would cut the JSON fuzzer to a few executions per second, and the
  # compile fuzzer takes ~270 ms to compile and run Llama (3-20 ms for the others): seeded with
  # it, its corpus fills with Llama variants and the rate falls from ~300 to ~30 per second.
  [[ "$stem" == llama ]] && continue
  cp "$archive" "$corpus/compile/"
  unzip -p "$archive" "$stem/models/model.json" > "$corpus/json/$stem.json"
done

# The largest seed (the Llama fixture) is ~1 MB; libFuzzer would otherwise truncate it.
max_len=$((2 * 1024 * 1024))
# One OpenBLAS thread: the reference runtime's GEMMs are tiny here, and idle workers cost a core.
export OPENBLAS_NUM_THREADS=1
for fuzzer in pt2_reader pt2_json compile; do
  corpus_dir="$corpus/${fuzzer#pt2_}"
  "$build/tests/fuzz/fuzz_$fuzzer" "$corpus_dir" \
    -max_total_time="$seconds" -max_len="$max_len" -timeout=20 -rss_limit_mb=2048 \
    -artifact_prefix="$artifacts/${fuzzer#pt2_}-" -print_final_stats=1
done
