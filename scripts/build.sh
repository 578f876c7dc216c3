#!/usr/bin/env bash
# Builds Pagoda in Release into build/ (the `pagoda` binary: build/pagoda).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build
