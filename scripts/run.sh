#!/usr/bin/env bash
# Quick start: installs what is missing, builds, and serves the default model
# (models/stories260K.gguf, shipped with the project) on 127.0.0.1:8000.
# Extra arguments go to `pagoda serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
exec build/pagoda serve --port 8000 "$@"
