#!/usr/bin/env bash
# README command (a): set up a fresh machine, build luminal and run the quickstart, which
# compiles a small Llama with luminal, checks it against eager and times eager/inductor/luminal.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
python3 examples/quickstart.py
