#!/usr/bin/env bash
# Builds the PT2 reader fuzzers in build-fuzz/ and runs each for N seconds (default 60).
# Seeds: the fixtures (whole archives) and their models/model.json (for the JSON fuzzer).
# Crashing inputs land in build-fuzz/fuzz-artifacts/; the script exits non-zero on a finding.
set -euo pipefail

seconds="${1:-60}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/build-fuzz"
fixtures="$root/tests/pt2/fixtures"

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++ -DLUMINAL_FUZZ=ON -DLUMINAL_TESTS=OFF -DLUMINAL_PYTHON=OFF
cmake --build "$build" -j2 --target fuzz_pt2_reader fuzz_pt2_json

corpus="$build/fuzz-corpus"
artifacts="$build/fuzz-artifacts"
mkdir -p "$corpus/reader" "$corpus/json" "$artifacts"
cp "$fixtures"/*.pt2 "$corpus/reader/"
for archive in "$fixtures"/*.pt2; do
  stem="$(basename "$archive" .pt2)"
  # The Llama JSON (~700 KB) would cut the JSON fuzzer to a few executions per second.
  [[ "$stem" == llama ]] && continue
  unzip -p "$archive" "$stem/models/model.json" > "$corpus/json/$stem.json"
done

# The largest seed (the Llama fixture) is ~1 MB; libFuzzer would otherwise truncate it.
max_len=$((2 * 1024 * 1024))
for fuzzer in reader json; do
  "$build/tests/fuzz/fuzz_pt2_$fuzzer" "$corpus/$fuzzer" \
    -max_total_time="$seconds" -max_len="$max_len" -timeout=20 -rss_limit_mb=2048 \
    -artifact_prefix="$artifacts/$fuzzer-" -print_final_stats=1
done
