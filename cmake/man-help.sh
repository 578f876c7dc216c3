#!/bin/sh
# What help2man reads to write pagoda.1 (CMakeLists.txt runs it as
# `env PAGODA=build/pagoda MODEL=<source>/models/stories260K.gguf help2man cmake/man-help.sh`):
# `pagoda --version`, and `pagoda --help-all` with each subcommand's name as a
# section heading (help2man's "*pagoda serve*") and the default model's build-time path
# replaced by where an install puts it.
set -eu
if [ "${1:-}" = --version ]; then
  exec "$PAGODA" --version
fi
"$PAGODA" --help-all | awk -v model="$MODEL" '
  index($0, model) { $0 = substr($0, 1, index($0, model) - 1) "PREFIX/share/pagoda/models/stories260K.gguf" \
                          substr($0, index($0, model) + length(model)) }
  /^Subcommands:$/ { sub_ = 1; next }
  sub_ && /^[a-z][a-z-]*$/ { print "*pagoda " $0 "*"; next }
  sub_ && /^  (Options|Positionals):$/ { next }
  sub_ { sub(/^  /, "") }
  { print }'
