#!/usr/bin/env bash
# Builds the .deb (CPack) from a build folder: builds the pagoda target (a
# no-op when it is up to date; configures build/ as scripts/build.sh does when
# it is not configured yet), runs cpack, and prints the .deb's path, the only
# line on stdout (cpack's output goes to stderr). The Containerfile and
# scripts/package-check.sh (CI) both make the package with this script.
# Usage: scripts/package.sh [BUILD_DIR]   (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPAGODA_TESTS=OFF -DPAGODA_BENCH=OFF >&2
fi
cmake --build "$build" --target pagoda >&2
rm -f "$build"/pagoda_*.deb
(cd "$build" && cpack -G DEB >&2)
debs=("$build"/pagoda_*.deb)
[[ -f "${debs[0]}" ]] || { echo "package.sh: cpack wrote no pagoda_*.deb in $build" >&2; exit 1; }
realpath "${debs[0]}"
