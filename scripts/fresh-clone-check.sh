#!/usr/bin/env bash
# CI check that a fresh clone serves out of the box: clones this repository
# into a temporary folder (no ../shared beside it, PAGODA_SHARED unset), puts
# the given, already built `pagoda` binary in its build/ (no rebuild), starts
# scripts/run.sh on a free port, asks for one completion (expects 200), and
# stops the server. Usage: scripts/fresh-clone-check.sh BUILD/pagoda
set -euo pipefail
binary=$(realpath "${1:?usage: $0 path/to/pagoda}")
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
pid=""
cleanup() {
  [[ -n "$pid" ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
git clone -q . "$tmp/pagoda"
mkdir -p "$tmp/pagoda/build"
cp "$binary" "$tmp/pagoda/build/pagoda"
log="$tmp/serve.log"
env -u PAGODA_SHARED PAGODA_NO_BUILD=1 PORT=0 "$tmp/pagoda/scripts/run.sh" --log-interval 0 >"$log" 2>&1 &
pid=$!
port=""
for _ in $(seq 1 300); do  # up to 30 s for "Pagoda listening on http://127.0.0.1:PORT"
  port=$(sed -n 's|^Pagoda listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$log")
  [[ -n "$port" ]] && break
  kill -0 "$pid" 2>/dev/null || { cat "$log"; echo "fresh clone: the server exited"; exit 1; }
  sleep 0.1
done
[[ -n "$port" ]] || { cat "$log"; echo "fresh clone: the server did not start"; exit 1; }
status=000
for _ in $(seq 1 100); do  # the model loads while /health says 503
  status=$(curl -s -o "$tmp/out.json" -w '%{http_code}' "http://127.0.0.1:$port/v1/completions" \
    -H 'Content-Type: application/json' -d '{"prompt":"Once upon a time","max_tokens":8}' || true)
  [[ "$status" == 200 ]] && break
  sleep 0.1
done
if [[ "$status" != 200 ]]; then
  cat "$log" "$tmp/out.json" 2>/dev/null
  echo "fresh clone: the completion answered $status"
  exit 1
fi
echo "fresh clone: served on port $port, completion 200: $(head -c 200 "$tmp/out.json")"
