# shellcheck shell=bash disable=SC2034  # serve_pid, serve_log and tmp are read by the caller
# Sourced by the CI scripts that start a server and ask it one completion
# (fresh-clone-check.sh, package-check.sh). Needs curl.
#
#   serve_check NAME DIR COMMAND...
# runs COMMAND (a `pagoda serve --port 0 ...`, or something that execs one) in
# the background, its output in DIR/NAME.log (NAME's odd characters as _; the
# path in $serve_log); waits up to $SERVE_CHECK_LISTEN_S (default 30) s for "Pagoda
# listening on http://127.0.0.1:PORT"; asks for one completion (expects 200,
# retrying for 10 s while the model loads); then stops it with SIGTERM and
# expects exit code 0 (a drained, normal end). Prints one line
# "NAME: served on port PORT, completion 200, SIGTERM exit 0: TEXT" and returns
# 0, or prints the log and the reason and returns 1. The server's pid is in
# $serve_pid while it runs: a caller's EXIT trap should call serve_stop.

serve_pid=""
serve_log=""

# A temporary folder in $tmp, removed (after the server, if one runs, is
# stopped) when the calling script exits.
serve_check_tmp() {
  tmp=$(mktemp -d)
  trap 'serve_stop; rm -rf "$tmp"' EXIT
}

serve_stop() {
  if [[ -n "$serve_pid" ]]; then
    kill "$serve_pid" 2>/dev/null || true
    wait "$serve_pid" 2>/dev/null || true
    serve_pid=""
  fi
}

serve_check() {
  local name=$1 dir=$2
  shift 2
  local file=${name//[^A-Za-z0-9.-]/_}
  local log="$dir/$file.log" out="$dir/$file.json" port="" status=000 rc=0
  serve_log=$log
  : >"$log"  # before the background job opens it, so the first look below finds it
  "$@" >"$log" 2>&1 &
  serve_pid=$!
  for _ in $(seq 1 $((${SERVE_CHECK_LISTEN_S:-30} * 10))); do
    port=$(sed -n 's|^Pagoda listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$log")
    [[ -n "$port" ]] && break
    if ! kill -0 "$serve_pid" 2>/dev/null; then
      wait "$serve_pid" || rc=$?
      serve_pid=""
      cat "$log"
      echo "$name: FAILED: the server exited (code $rc) before listening"
      return 1
    fi
    sleep 0.1
  done
  if [[ -z "$port" ]]; then
    serve_stop
    cat "$log"
    echo "$name: FAILED: the server did not start in ${SERVE_CHECK_LISTEN_S:-30} s"
    return 1
  fi
  for _ in $(seq 1 100); do  # the model loads while /health says 503
    status=$(curl -s -o "$out" -w '%{http_code}' "http://127.0.0.1:$port/v1/completions" \
      -H 'Content-Type: application/json' -d '{"prompt":"Once upon a time","max_tokens":8}' || true)
    [[ "$status" == 200 ]] && break
    sleep 0.1
  done
  if [[ "$status" != 200 ]]; then
    serve_stop
    cat "$log" "$out" 2>/dev/null
    echo "$name: FAILED: the completion answered $status"
    return 1
  fi
  kill -TERM "$serve_pid"
  wait "$serve_pid" || rc=$?
  serve_pid=""
  if [[ $rc != 0 ]]; then
    cat "$log"
    echo "$name: FAILED: exit code $rc after SIGTERM (want 0)"
    return 1
  fi
  echo "$name: served on port $port, completion 200, SIGTERM exit 0: $(head -c 160 "$out")"
}
