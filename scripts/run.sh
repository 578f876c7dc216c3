#!/usr/bin/env bash
# Quick start: installs what is missing, builds, and serves the default model
# (../shared/models/stories260K.gguf, or $PAGODA_SHARED/models) on
# 127.0.0.1:8000. Extra arguments go to `pagoda serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
export PAGODA_SHARED="${PAGODA_SHARED:-$(cd .. && pwd)/shared}"
exec build/pagoda serve --port 8000 "$@"
