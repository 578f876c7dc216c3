#!/usr/bin/env bash
# Quick start: installs what is missing, builds, and runs Pagoda on the
# default model (../shared/models/stories260K.gguf, or $PAGODA_SHARED/models).
# Extra arguments go to `pagoda generate`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
export PAGODA_SHARED="${PAGODA_SHARED:-$(cd .. && pwd)/shared}"
exec build/pagoda generate -p "Once upon a time" -n 200 "$@"
