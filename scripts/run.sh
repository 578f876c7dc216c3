#!/usr/bin/env bash
# Quick start: installs what is missing, builds, and serves the default model
# (models/stories260K.gguf, shipped with the project) on 127.0.0.1:8000.
# Extra arguments go to `pagoda serve`. PORT=N serves on another port (0: a
# free one, printed); PAGODA_NO_BUILD=1 serves the build/pagoda already there
# without installing or building (CI's fresh-clone check).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${PAGODA_NO_BUILD:-0}" != 1 ]]; then
  scripts/install-deps.sh --serve
  scripts/build.sh
elif [[ ! -x build/pagoda ]]; then
  echo "run.sh: PAGODA_NO_BUILD=1 but build/pagoda does not exist" >&2
  exit 1
fi
exec build/pagoda serve --port "${PORT:-8000}" "$@"
