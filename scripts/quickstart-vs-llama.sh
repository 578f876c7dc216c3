#!/usr/bin/env bash
# The quick start against llama.cpp's, from scratch, on this machine, in one run
# (never in CI: ~15 minutes on 2 cores). Times
#   1. a fresh clone of this repository to its first completion: scripts/run.sh
#      (dependencies already installed; the compiler cache off), then one request;
#   2. llama.cpp v0.5.0 (the source bundle in the npm package node-llama-cpp@3.22.1)
#      configured and `cmake --build --target llama-server` from scratch, with
#      -DGGML_NATIVE=ON, the same number of jobs;
# and prints both. Everything happens in a temporary folder, removed at the end.
# Usage: scripts/quickstart-vs-llama.sh [JOBS]   (default: nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/serve-check.sh
jobs=${1:-$(nproc)}
serve_check_tmp

echo "== Pagoda: fresh clone -> scripts/run.sh -> first completion ($jobs jobs, no ccache)"
git clone -q . "$tmp/pagoda"
start=$(date +%s%N)
CCACHE_DISABLE=1 CMAKE_BUILD_PARALLEL_LEVEL=$jobs SERVE_CHECK_LISTEN_S=3600 \
  serve_check "pagoda quick start" "$tmp" env -u PAGODA_SHARED PORT=0 "$tmp/pagoda/scripts/run.sh" --log-interval 0
pagoda_s=$((($(date +%s%N) - start) / 1000000000))

echo "== llama.cpp v0.5.0: cmake configure + --build --target llama-server ($jobs jobs)"
(cd "$tmp" && npm pack node-llama-cpp@3.22.1 --silent >/dev/null && tar xzf node-llama-cpp-3.22.1.tgz package/llama)
git clone -q "$tmp/package/llama/gitRelease.bundle" "$tmp/llama.cpp" 2>/dev/null
start=$(date +%s%N)
cmake -S "$tmp/llama.cpp" -B "$tmp/llama.cpp/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
  -DLLAMA_CURL=OFF >/dev/null
cmake --build "$tmp/llama.cpp/build" --target llama-server -j "$jobs" >/dev/null
llama_s=$((($(date +%s%N) - start) / 1000000000))

printf '\n| from scratch, %s jobs | seconds |\n|---|---|\n' "$jobs"
echo "| Pagoda: fresh clone to the first completion (scripts/run.sh) | $pagoda_s |"
echo "| llama.cpp v0.5.0: configure + build llama-server | $llama_s |"
awk -v p="$pagoda_s" -v l="$llama_s" 'BEGIN { printf "ratio (Pagoda / llama.cpp): %.2f\n", p / l }'
