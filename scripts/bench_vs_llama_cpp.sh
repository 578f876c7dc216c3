#!/usr/bin/env bash
# Pagoda's forward pass against llama.cpp v0.5.0's on the same GGUF files, in
# alternating turns (never in CI: the llama.cpp build alone takes ~15 minutes
# on 2 cores). llama.cpp is built from the source bundle in the npm package
# node-llama-cpp@3.22.1 (llama/gitRelease.bundle, tag v0.5.0) with its own
# CMake and -DGGML_NATIVE=ON, in a folder outside this repository; nothing of
# it is kept here. Per round: `llama-bench -p 512 -n 128 -d 0,512` (pp512, tg128
# at depth 0 and 512) and `pagoda bench-model` (prefill of 512 tokens, batch-1
# decode at context 0 and 512),
# each file, same threads; then the medians and their ratios.
#
#   scripts/bench_vs_llama_cpp.sh [ROUNDS]     (default 3)
#   env: CROWD=1 also runs 32 streams through `pagoda serve` and llama-server
#        (scripts/serve-vs-llama-server.py, -np 32 and 16) on each file;
#        PAGODA (build/pagoda), CACHE (/tmp/pbcache: bench-model's --cache, the
#        GGUF files both run), MODELS (1b), TYPES (q4_k), THREADS (2),
#        LLAMA_TGZ (the npm tarball; default /work/llama-src/node-llama-cpp-3.22.1.tgz
#        if present, else `npm pack node-llama-cpp@3.22.1`),
#        LLAMA_BUILD (/tmp/llama.cpp-v0.5.0: the clone and build, reused when
#        build/bin/llama-bench and llama-server are already there; the server
#        is for scripts/serve-vs-llama-server.py)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
pagoda=$(realpath "${PAGODA:-build/pagoda}")
cache=${CACHE:-/tmp/pbcache}
models=${MODELS:-1b}
types=${TYPES:-q4_k}
threads=${THREADS:-2}
llama=${LLAMA_BUILD:-/tmp/llama.cpp-v0.5.0}
case "$llama" in "$PWD"/*) echo "LLAMA_BUILD must be outside the repository" >&2; exit 2 ;; esac
mkdir -p "$cache"

if [ ! -x "$llama/build/bin/llama-bench" ] || [ ! -x "$llama/build/bin/llama-server" ]; then
  # shellcheck source=scripts/lib/llama-cpp-source.sh
  source scripts/lib/llama-cpp-source.sh
  rm -rf "$llama"
  llama_cpp_source "$llama"
  echo "building llama-bench and llama-server in $llama/build (-DGGML_NATIVE=ON, $(nproc) jobs)"
  cmake -S "$llama" -B "$llama/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=ON >/dev/null
  cmake --build "$llama/build" --target llama-bench llama-server -j "$(nproc)" >/dev/null
fi

out=$(mktemp -d /tmp/bench_vs_llama.XXXXXX)
echo "results in $out; machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
# bench-model writes the files (once; --cache keeps them) and measures; llama-bench reads the same files.
for r in $(seq 1 "$rounds"); do
  echo "round $r: pagoda (load $(cut -d' ' -f1 /proc/loadavg))"
  "$pagoda" bench-model --cache "$cache" --models "$models" --types "$types" --batches 1 --prompt 512 \
    -t "$threads" --json 2>/dev/null >"$out/pagoda.$r.json"
  for m in ${models//,/ }; do
    for t in ${types//,/ }; do
      echo "round $r: llama-bench $m-$t (load $(cut -d' ' -f1 /proc/loadavg))"
      "$llama/build/bin/llama-bench" -m "$cache/$m-$t.gguf" -p 512 -n 128 -d 0,512 -t "$threads" -r 3 -o json \
        2>/dev/null >"$out/llama.$m-$t.$r.json"
    done
  done
done

python3 - "$out" <<'EOF'
import glob, json, statistics, sys
out = sys.argv[1]
pagoda, llama = {}, {}
for f in glob.glob(f"{out}/pagoda.*.json"):
    for r in json.load(open(f))["results"]:
        k = f"{r['model']}-{r['type']}"
        pagoda.setdefault(k, {"pp": [], "tg0": [], "tg512": []})
        pagoda[k]["pp"].append(r["prefill_tokens_per_s"])
        for d in r["decode"]:
            if d["batch"] == 1 and d["context"] in (0, 512):
                pagoda[k][f"tg{d['context']}"].append(d["tokens_per_s"])
for f in glob.glob(f"{out}/llama.*.json"):
    k = f.split("/llama.")[1].rsplit(".", 2)[0]
    llama.setdefault(k, {"pp": [], "tg0": [], "tg512": []})
    for t in json.load(open(f)):
        if t["n_gen"] == 0:
            if t.get("n_depth", 0) == 0:
                llama[k]["pp"].append(t["avg_ts"])
        else:
            llama[k].setdefault(f"tg{t.get('n_depth', 0)}", []).append(t["avg_ts"])
med = lambda xs: statistics.median(xs) if xs else float("nan")
print(f"\nmedians of the rounds, tokens/s (load now {open('/proc/loadavg').read().split()[0]})")
print(f"{'file':<10} {'pagoda pp512':>13} {'llama pp512':>12} {'ratio':>6} {'pagoda tg':>10} {'llama tg128':>12} {'ratio':>6}"
      f" {'pagoda tg@512':>14} {'llama tg@512':>13} {'ratio':>6}")
for k in sorted(pagoda):
    p, l = pagoda[k], llama.get(k, {"pp": [], "tg0": [], "tg512": []})
    pp, lpp, tg, ltg = med(p["pp"]), med(l["pp"]), med(p["tg0"]), med(l["tg0"])
    tgd, ltgd = med(p["tg512"]), med(l.get("tg512", []))
    print(f"{k:<10} {pp:>13.1f} {lpp:>12.1f} {pp / lpp:>6.2f} {tg:>10.2f} {ltg:>12.2f} {tg / ltg:>6.2f}"
          f" {tgd:>14.2f} {ltgd:>13.2f} {tgd / ltgd:>6.2f}")
print("(pagoda tg: bench-model's batch-1 decode, each step from DRAM, at context 0 and 512; llama tg128:"
      " 128 tokens from depth 0 and 512, -d)")
# Each round's ratio (Pagoda's turn against the llama-bench turn right after it), then their
# median: the VM's memory speed drifts between rounds more than between two turns.
def per_round(k, what):
    ratios = []
    for f in sorted(glob.glob(f"{out}/pagoda.*.json")):
        r = f.rsplit(".", 2)[1]
        mine = [x for x in json.load(open(f))["results"] if f"{x['model']}-{x['type']}" == k]
        try:
            theirs = json.load(open(f"{out}/llama.{k}.{r}.json"))
        except (OSError, ValueError):
            continue
        if not mine:
            continue
        if what == "pp":
            a = mine[0]["prefill_tokens_per_s"]
            b = [t["avg_ts"] for t in theirs if t["n_gen"] == 0 and t.get("n_depth", 0) == 0]
        else:
            depth = int(what[2:])
            a = next((d["tokens_per_s"] for d in mine[0]["decode"] if d["batch"] == 1 and d["context"] == depth), None)
            b = [t["avg_ts"] for t in theirs if t["n_gen"] > 0 and t.get("n_depth", 0) == depth]
        if a and b:
            ratios.append(a / b[0])
    return ratios
print("\nper-round ratios (Pagoda / llama.cpp), and their median")
for k in sorted(pagoda):
    for what in ("pp", "tg0", "tg512"):
        rs = per_round(k, what)
        print(f"{k:<10} {what:<6} " + " ".join(f"{x:.2f}" for x in rs) + f"   median {med(rs):.2f}")
EOF

# The crowd (CROWD=1): 32 streams through both servers on each file, llama-server at -np 32
# and at -np 16 (its best of the two is the comparison), in turns.
if [ "${CROWD:-0}" = 1 ]; then
  for m in ${models//,/ }; do
    for t in ${types//,/ }; do
      for np in 32 16; do
        echo "crowd: $m-$t, 32 streams, llama-server -np $np"
        python3 scripts/serve-vs-llama-server.py --model "$cache/$m-$t.gguf" --pagoda "$pagoda" \
          --llama-server "$llama/build/bin/llama-server" --threads "$threads" --streams 32 --rounds 1 \
          --prompt-tokens 120:140 --llama-np "$np" | sed -n '/^| streams/,$p'
      done
    done
  done
fi
