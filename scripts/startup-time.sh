#!/usr/bin/env bash
# Seconds from exec of `pagoda serve` to its first /health 200 (loopback, a random port).
#   scripts/startup-time.sh BINARY MODEL [serve flags...]
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: $0 BINARY MODEL [serve flags...]" >&2; exit 2; }
bin=$1 model=$2
shift 2
port=$((20000 + RANDOM % 20000))
log=$(mktemp)
t0=$(date +%s.%N)
"$bin" serve -m "$model" --port "$port" --log-interval 0 "$@" >"$log" 2>&1 &
pid=$!
ready=0
for _ in $(seq 1 12000); do  # at most ~2 minutes
  if [[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" == 200 ]]; then ready=1; break; fi
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.01
done
t1=$(date +%s.%N)
kill "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
if [[ $ready != 1 ]]; then echo "never ready; its log:" >&2; cat "$log" >&2; rm -f "$log"; exit 1; fi
rm -f "$log"
awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f s\n", b - a }'
