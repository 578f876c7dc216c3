#!/usr/bin/env bash
# CI check that a fresh clone serves out of the box, timed: clones this
# repository into a temporary folder (no ../shared beside it, PAGODA_SHARED
# unset), runs the quick start there (scripts/run.sh: installs what is missing,
# builds the `pagoda` target, serves the default model) on a free port, asks
# for one completion (expects 200), stops the server, and prints how long the
# clone took to its first completion. Compiles go through ccache when it is
# installed: after scripts/test.sh's Release build the clone's build is warm
# (only src/cli/main.cpp, which holds the clone's path, compiles). The cold
# figure, against llama.cpp's: scripts/quickstart-vs-llama.sh.
# Usage: scripts/fresh-clone-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/serve-check.sh
serve_check_tmp
start=$(date +%s%N)
git clone -q . "$tmp/pagoda"
SERVE_CHECK_LISTEN_S=1800 serve_check "fresh clone" "$tmp" env -u PAGODA_SHARED PORT=0 "$tmp/pagoda/scripts/run.sh" \
  --log-interval 0
echo "fresh clone: to the first completion in $((($(date +%s%N) - start) / 1000000000)) s" \
  "(clone, scripts/run.sh with its build, one request)"
