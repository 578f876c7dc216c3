#!/usr/bin/env bash
# Decode throughput with and without a JSON Schema constraint, alternating,
# on one running server: 16 concurrent streams, fixed 64-token outputs. The
# schema (an array of at least 50 objects) cannot finish within 64 tokens, so
# both kinds of run generate the same number of tokens and only the masks
# differ. Prints each run's output tok/s, then the constrained/unconstrained
# ratio of the means and the load average.
#
#   build/pagoda serve -m /tmp/m1b/1b-q4_k.gguf --port 8123 &
#   scripts/structured-throughput.sh [PORT] [ROUNDS]
set -euo pipefail
PORT=${1:-8123}
ROUNDS=${2:-2}
BIN=${PAGODA:-build/pagoda}
SCHEMA='{"type":"array","minItems":50,"items":{"type":"object","properties":{"name":{"type":"string","maxLength":12},"n":{"type":"integer"}},"required":["name","n"]}}'
EXTRA="{\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"rows\",\"schema\":$SCHEMA}}}"
run() {  # $@: extra loadgen flags; prints output tok/s
  "$BIN" loadgen --port "$PORT" -c 16 -n 16 --prompt-tokens 20:40 --output-tokens 64:64 --ignore-eos \
    --temperature 1 --json "$@" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["tokens_per_s"], r["ok"])'
}
plain=() constrained=()
for ((i = 0; i < ROUNDS; ++i)); do
  read -r p ok <<<"$(run)"
  echo "round $i unconstrained: $p tok/s ($ok ok)"
  read -r c ok <<<"$(run --body-extra "$EXTRA")"
  echo "round $i constrained:   $c tok/s ($ok ok)"
  plain+=("$p") constrained+=("$c")
done
python3 - "${plain[*]}" "${constrained[*]}" <<'PY'
import sys
p = [float(x) for x in sys.argv[1].split()]
c = [float(x) for x in sys.argv[2].split()]
print(f"mean unconstrained {sum(p)/len(p):.1f} tok/s, constrained {sum(c)/len(c):.1f} tok/s, "
      f"ratio {sum(c)/sum(p):.3f}")
PY
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
