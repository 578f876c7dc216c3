#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs what is missing, checks the
# C++ style (clang-format), installs the npm test oracles, then
#   1. Release build, every test (ctest); a fresh clone's quick start, timed
#      (scripts/run.sh builds and serves there; warm from this build's ccache);
#      the .deb and `cmake --install` serve a completion (scripts/package-check.sh);
#   2. AddressSanitizer + UndefinedBehaviorSanitizer build, every test again;
#   3. libFuzzer build (clang), each fuzz target for $PAGODA_FUZZ_SECONDS
#      (default 30) s, one per core at a time (scripts/fuzz.sh);
#   4. the quick benchmarks, so they never rot;
#   5. `pagoda soak` at 1,000 requests per mode, and at 300 on a small hybrid
#      model (its recurrent-state slots must drain too).
# Set PAGODA_TEST_QUICK=1 to run step 1 only. Compiles go through ccache when it
# is installed: a warm machine rebuilds only what changed (the step timings and
# ccache's hit count are printed; docs/contributing.md has the breakdown).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# The npm test oracles are installed below: a test that misses one fails here rather than skips.
export PAGODA_REQUIRE_ORACLES=1
export PAGODA_SHARED="${PAGODA_SHARED:-$(cd .. && pwd)/shared}"
jobs=$(nproc)
start=$(date +%s)
step() { echo; echo "== $* ($(( $(date +%s) - start )) s)"; }

step "C++ style (.clang-format)"
# Every C++ file as clang-format writes it (the generated Unicode tables aside).
git ls-files '*.cpp' '*.h' | grep -v -e node_modules -e unicode_tables.cpp | xargs clang-format --dry-run -Werror

step "npm test oracles"
npm ci --prefix tests/chat/oracle --no-audit --no-fund
npm install --prefix tests/tokenizer/oracle --no-audit --no-fund
npm ci --prefix tests/testing/llama_cpp --no-audit --no-fund
npm ci --prefix tests/server/openai_client --no-audit --no-fund
npm ci --prefix tests/dashboard --no-audit --no-fund

step "Release build and tests"
# The CUDA kernels build where nvcc is (PAGODA_CUDA=AUTO, ~10 s of nvcc); their tests skip without a GPU.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPAGODA_TESTS=ON -DPAGODA_BENCH=ON >/dev/null
cmake --build build
ctest --test-dir build --output-on-failure -j "$jobs"

step "Fresh clone: scripts/run.sh serves and completes"
scripts/fresh-clone-check.sh

step "Package: the .deb and cmake --install serve a completion"
scripts/package-check.sh
[[ "${PAGODA_TEST_QUICK:-0}" == 1 ]] && exit 0

step "ASan + UBSan build and tests"
# -O1 -g1: a faster build than RelWithDebInfo, still readable sanitizer reports.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O1 -g1" -DPAGODA_SANITIZE=ON \
  -DPAGODA_BENCH=OFF -DPAGODA_CUDA=OFF >/dev/null
cmake --build build-asan
# PAGODA_TEST_SCALE shrinks the server's crowd and load tests under the sanitizers.
PAGODA_TEST_SCALE=0.25 ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs"

step "Fuzz targets"
# Line tables are all a report needs, and ~10% cheaper to compile than full debug info.
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPAGODA_FUZZ=ON -DPAGODA_TESTS=OFF \
  -DPAGODA_BENCH=OFF -DPAGODA_CUDA=OFF -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG" \
  >/dev/null
fuzz_targets=$(cd build-fuzz && ninja -t targets all | sed -n 's/^\(fuzz_[a-z_]*\):.*/\1/p')
cmake --build build-fuzz --target $fuzz_targets
scripts/fuzz.sh build-fuzz

step "Quick benchmarks"
for b in build/bench_*; do
  [[ -x "$b" ]] || continue
  echo "-- $b"
  "$b" --benchmark_min_time=0.01 2>&1 | tail -n 30
done
echo "-- build/pagoda bench-model --quick"
build/pagoda bench-model --quick

step "Soak: 1,000 rude requests per mode; 300 on a hybrid model"
build/pagoda soak -n 1000
hybrid_model=$(mktemp -d)/10m-hybrid.gguf
build/pagoda synth 10m-hybrid "$hybrid_model" --type q8_0
build/pagoda soak -m "$hybrid_model" -n 300
rm -rf "$(dirname "$hybrid_model")"
command -v ccache >/dev/null && ccache --show-stats | grep -E 'Hits|Misses|Cache size' || true
step "All tests passed"
