#!/usr/bin/env bash
# Batch-1 decode through the whole engine against the bare forward pass, on
# one GGUF file: `pagoda bench-model`'s figure is the ceiling, `pagoda
# generate` and `pagoda serve` + one streaming `pagoda loadgen` client what a
# user gets. Each binary given runs each turn (A, B, A, B, ...), so two builds
# are compared side by side on a moving machine; the figures are medians.
# The engine's step trace (PAGODA_STEP_TRACE, src/engine/step_trace.h) says
# where each variant's time per token went. Never run in CI: minutes, 2 cores.
#
#   scripts/bench_batch1.sh MODEL.gguf ROUNDS BIN [BIN...]
#   env: TOKENS (200), THREADS (2), PORT (18471), PROMPT; BENCH=1 also runs
#   bench-model (batch 1, contexts 0 and 512) once a round with the first binary
set -euo pipefail

model=${1:?model.gguf}
rounds=${2:?rounds}
shift 2
bins=("$@")
[ ${#bins[@]} -gt 0 ] || { echo "give at least one pagoda binary" >&2; exit 2; }
tokens=${TOKENS:-200}
threads=${THREADS:-2}
port=${PORT:-18471}
prompt=${PROMPT:-"Once upon a time there was a little robot who"}
out=$(mktemp -d /tmp/bench_batch1.XXXXXX)
echo "results in $out; machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

server_pid=
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true; }
trap cleanup EXIT

run_generate() {  # bin tag round
  PAGODA_STEP_TRACE=1000000 timeout 300 "$1" generate -m "$model" -p "$prompt" -n "$tokens" --ignore-eos \
    -t "$threads" --seed 1 >/dev/null 2>"$out/gen.$2.$3.trace"
}

run_serve() {  # bin tag round
  local log="$out/serve.$2.$3.log"
  PAGODA_STEP_TRACE=1000000 "$1" serve -m "$model" --port "$port" -t "$threads" --no-dashboard --log-interval 0 \
    >"$log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 600); do
    # Serving from the map while the weights move is start-up, not decode: wait for the move.
    grep -q "moved into memory" "$log" 2>/dev/null && curl -sf "http://127.0.0.1:$port/health" >/dev/null && break
    sleep 0.2
  done
  timeout 300 "$1" loadgen --port "$port" -c 1 -n 3 --max-tokens "$tokens" --ignore-eos --prompt "$prompt" \
    --json >"$out/loadgen.$2.$3.json" 2>/dev/null || true
  kill -INT "$server_pid"
  wait "$server_pid" 2>/dev/null || true
  server_pid=
}

run_bench() {  # bin tag round
  timeout 600 "$1" bench-model --cache "$(dirname "$model")" --models 1b --types q4_k --batches 1 --steps 20 \
    -t "$threads" --json 2>/dev/null >"$out/bench.$2.$3.json" || true
}

for r in $(seq 1 "$rounds"); do
  for i in "${!bins[@]}"; do
    echo "round $r: ${bins[$i]} (load $(cut -d' ' -f1 /proc/loadavg))"
    run_generate "${bins[$i]}" "$i" "$r"
    run_serve "${bins[$i]}" "$i" "$r"
  done
  # The forward pass is the variants' common ceiling: measured once a round, with the first binary.
  if [ -n "${BENCH:-}" ]; then run_bench "${bins[0]}" 0 "$r"; fi
done

python3 - "$out" "${bins[@]}" <<'EOF'
import glob, json, re, statistics, sys
out, bins = sys.argv[1], sys.argv[2:]
def trace(path):
    text = open(path).read()
    blocks = text.split("step trace:")
    if len(blocks) < 2: return None
    b = blocks[-1]
    phases = {m[0]: float(m[1]) for m in re.findall(r"^(\w+)\s+([\d.]+)\s+[\d.]+%$", b, re.M)}
    m = re.search(r"tokens/s ([\d.]+) busy, ([\d.]+) forward only", b)
    phases["tok/s busy"], phases["tok/s fwd"] = float(m[1]), float(m[2])
    return phases
def med(xs): return statistics.median(xs) if xs else float("nan")
print(f"\nmedians over the rounds (load now {open('/proc/loadavg').read().split()[0]})")
rows = {}
for i, b in enumerate(bins):
    g = [t for t in map(trace, sorted(glob.glob(f"{out}/gen.{i}.*.trace"))) if t]
    s = [t for t in map(trace, sorted(glob.glob(f"{out}/serve.{i}.*.log"))) if t]
    lg = []
    for f in sorted(glob.glob(f"{out}/loadgen.{i}.*.json")):
        try: lg.append(json.load(open(f)))
        except Exception: pass
    tpot = [j["tpot_ms"]["p50"] for j in lg if j.get("tpot_ms")]
    bench = []
    for f in sorted(glob.glob(f"{out}/bench.{i}.*.json")):
        try:
            j = json.load(open(f))
            bench += [(d["context"], d["tokens_per_s"]) for r in j["results"] for d in r["decode"] if d["batch"] == 1]
        except Exception: pass
    rows[b] = (g, s, tpot, bench)
    print(f"\n[{i}] {b}")
    for ctx in sorted({c for c, _ in bench}):
        print(f"  bench-model batch-1 context {ctx}: {med([t for c, t in bench if c == ctx]):.2f} tok/s")
    for name, ts in (("generate", g), ("serve", s)):
        if not ts: continue
        keys = [k for k in ts[0] if not k.startswith("tok/s")]
        print(f"  {name} engine thread, us/step: " + "  ".join(f"{k} {med([t[k] for t in ts]):.0f}" for k in keys))
        print(f"  {name} tok/s: busy {med([t['tok/s busy'] for t in ts]):.2f}, forward only {med([t['tok/s fwd'] for t in ts]):.2f}")
    if tpot: print(f"  serve client (loadgen 1 stream): tpot p50 {med(tpot):.2f} ms = {1000/med(tpot):.2f} tok/s")
EOF
