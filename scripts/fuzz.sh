#!/usr/bin/env bash
# Runs every fuzz target in BUILD_DIR (default build-fuzz) for $PAGODA_FUZZ_SECONDS
# (default 30) s each, seeded from fuzz/corpus/<name>/, $PAGODA_FUZZ_JOBS at a time
# (default: one per core; each target is one process on one core). On a failure
# it prints the report and the failing input in base64, so a CI log alone
# reproduces it, and exits 1 once the running targets end.
# Usage: scripts/fuzz.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-fuzz}
seconds=${PAGODA_FUZZ_SECONDS:-30}

# One target: its log goes to stdout in one piece when it ends.
run_one() {
  local target=$1 dir=$2 seconds=$3
  local name corpus log status=0
  name=$(basename "$target" | sed 's/^fuzz_//')
  corpus=$(mktemp -d)
  log=$(mktemp)
  [[ -d "fuzz/corpus/$name" ]] && cp -r "fuzz/corpus/$name/." "$corpus/"
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 "$target" -max_total_time="$seconds" -max_len=65536 \
    -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 -artifact_prefix="$dir/$name-" "$corpus" >"$log" 2>&1 ||
    status=$?
  {
    echo "-- $target for $seconds s: $([[ $status == 0 ]] && echo passed || echo "FAILED (exit $status)")"
    if [[ $status != 0 ]]; then
      tail -n 60 "$log"
      for input in "$dir/$name"-*; do
        [[ -f "$input" ]] && echo "-- failing input $input (base64): $(base64 -w0 "$input" | head -c 8192)"
      done
    else
      tail -n 12 "$log"
    fi
  } >"$log.out"
  cat "$log.out"
  rm -rf "$corpus" "$log" "$log.out"
  return $status
}
export -f run_one

targets=$(find "$dir" -maxdepth 1 -name 'fuzz_*' -type f -executable | sort)
[[ -n "$targets" ]] || { echo "fuzz.sh: no fuzz targets in $dir" >&2; exit 1; }
# xargs exits 123 when any run_one failed; every target still runs to its end.
echo "$targets" | xargs -P "${PAGODA_FUZZ_JOBS:-$(nproc)}" -I{} bash -c 'run_one "$@"' _ {} "$dir" "$seconds"
