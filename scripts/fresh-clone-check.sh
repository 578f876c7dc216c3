#!/usr/bin/env bash
# CI check that a fresh clone serves out of the box: clones this repository
# into a temporary folder (no ../shared beside it, PAGODA_SHARED unset), puts
# the given, already built `pagoda` binary in its build/ (no rebuild), starts
# scripts/run.sh on a free port, asks for one completion (expects 200), and
# stops the server. Usage: scripts/fresh-clone-check.sh BUILD/pagoda
set -euo pipefail
binary=$(realpath "${1:?usage: $0 path/to/pagoda}")
cd "$(dirname "$0")/.."
source scripts/lib/serve-check.sh
tmp=$(mktemp -d)
cleanup() {
  serve_stop
  rm -rf "$tmp"
}
trap cleanup EXIT
git clone -q . "$tmp/pagoda"
mkdir -p "$tmp/pagoda/build"
cp "$binary" "$tmp/pagoda/build/pagoda"
serve_check "fresh clone" "$tmp" env -u PAGODA_SHARED PAGODA_NO_BUILD=1 PORT=0 "$tmp/pagoda/scripts/run.sh" \
  --log-interval 0
