#!/usr/bin/env bash
# Builds what serving needs, in Release, into build/ (the `pagoda` binary:
# build/pagoda). scripts/test.sh builds the rest (tests, benchmarks) in the same
# folder, so the libraries compile once for both.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPAGODA_TESTS=OFF -DPAGODA_BENCH=OFF >/dev/null
cmake --build build --target pagoda
