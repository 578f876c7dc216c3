#!/usr/bin/env bash
# The GPU machine's check (docs/gpu.md): run in the repository root with the
# CUDA binaries already built (it never builds). Phases, each under its own
# timeout, each appending a JSON line to OUT/phases.jsonl as it ends, so a run
# cut off part way still says what finished:
#   0  environment: nvidia-smi, ldd of the binaries (cuBLAS resolved?), and
#      pagoda_cuda_probe (device-to-device copy bandwidth, cuBLAS F16 GEMM TFLOP/s)
#   1  pagoda_cuda_tests (every kernel against its CPU reference), then
#      compute-sanitizer memcheck and racecheck on a subset, when installed
#   2  the forward pass against the CPU's (logits per weight type and architecture, a mixed
#      batch against each sequence alone, greedy tokens through the engine), then the real
#      faults (out of memory, a trap, a hung kernel), each fault in a process of its own
#   3  speed: `pagoda bench --device cuda` at batch 1, 32, 128 and prefill on 1B- and
#      8B-shaped synthetic files (Q4_K, Q8_0; written to $PAGODA_DEVICE_TMP, default /tmp),
#      and 1B Q4_K again with --enforce-eager (batch 1, 32) and --cpu-sampling (batch 128)
#   4  the seeds through the real server: 128 clients with 30% hang-ups, 30 x 351 tokens into
#      a 4,096-token pool, a real OOM at a pass, a trap at pass 200 under 128 clients (exit
#      code 4, a restart that serves)
#   5  llama.cpp's CUDA build on the same files, when BUILD/llama-cuda is there
#      (scripts/build-llama-cuda.sh): llama-bench pp512 / tg128 at depth 0 and 512 beside
#      Pagoda's batch-1 decode at those depths, then both servers under `pagoda loadgen` at
#      32 and 128 streams (scripts/serve-vs-llama-server.py; 8B Q4_K)
# PAGODA_DEVICE_PHASES picks phases (default "0 1 2 3 4 5"): a session's commands may run 10
# minutes each, so run "0 1 2", then "3", then "5" and "4" as time allows.
#
#   scripts/device-check.sh [OUT]      OUT: $OUT if set, else the argument, else ./device-check-out
#   scripts/device-check.sh --stage    on the build machine: copy the shared libraries the
#                                      binaries need beyond libc, libstdc++ and CUDA into
#                                      BUILD/device-libs, then pack the binaries, those
#                                      libraries and BUILD/llama-cuda (if built) into
#                                      BUILD/device-bundle.tar.xz: the one path to carry (the
#                                      files themselves are past the 64 MiB a call carries);
#                                      on the device, `tar -xJf BUILD/device-bundle.tar.xz`
# Environment: BUILD (default build), LLAMA_CUDA (default BUILD/llama-cuda),
# PAGODA_SANITIZER_FILTER, PAGODA_RACECHECK_FILTER.
set -euo pipefail

build=${BUILD:-build}
tests_bin=$build/pagoda_cuda_tests
probe_bin=$build/pagoda_cuda_probe
pagoda_bin=$build/pagoda
phases=${PAGODA_DEVICE_PHASES:-0 1 2 3 4 5}
libs_dir=$build/device-libs
llama_dir=${LLAMA_CUDA:-$build/llama-cuda}

if [[ "${1:-}" == "--stage" ]]; then
  mkdir -p "$libs_dir"
  for bin in "$tests_bin" "$probe_bin" "$pagoda_bin"; do
    [[ -x "$bin" ]] || { echo "device-check: $bin is not built (configure with -DPAGODA_CUDA=ON, build it)" >&2; exit 1; }
    # Libraries outside the C runtime, the toolchain's and CUDA's own (cuBLAS must come from the GPU machine).
    ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' |
      grep -Ev '/(libc|libm|libdl|librt|libpthread|libresolv|libgcc_s|libstdc\+\+|ld-linux[^/]*)\.so|/libcublas' |
      while read -r lib; do cp -Lv "$lib" "$libs_dir/"; done
  done
  # One compressed file to carry: CUDA's fat binaries and the libraries shrink ~3-4x.
  parts=("$(basename "$tests_bin")" "$(basename "$probe_bin")" "$(basename "$pagoda_bin")" "$(basename "$libs_dir")")
  if [[ -x "$llama_dir/llama-bench" ]]; then
    parts+=("$(realpath --relative-to="$build" "$llama_dir")")
  else
    echo "device-check: no llama.cpp CUDA build in $llama_dir (scripts/build-llama-cuda.sh): phase 5 will skip"
  fi
  tar -C "$build" -cf - "${parts[@]}" | xz -T0 -6 >"$build/device-bundle.tar.xz"
  echo "device-check: $build/device-bundle.tar.xz, $(du -m "$build/device-bundle.tar.xz" | cut -f1) MiB: ${parts[*]}"
  exit 0
fi

out=${OUT:-${1:-device-check-out}}
mkdir -p "$out"
out=$(cd "$out" && pwd)
jsonl=$out/phases.jsonl
: >"$jsonl"
# The staged libraries first, then the toolkit's folders for cuBLAS (the binaries' rpath names
# the build machine's, which the GPU machine may lay out differently).
lib_path=${LD_LIBRARY_PATH:-}
for d in /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda/lib /usr/local/cuda/lib64 "$libs_dir"; do
  [[ -d "$d" ]] && lib_path="$(cd "$d" && pwd)${lib_path:+:$lib_path}"
done
export LD_LIBRARY_PATH=$lib_path

# record PHASE NAME STATUS [EXTRA_JSON]: one line to phases.jsonl and to stdout.
record() {
  local line="{\"phase\":$1,\"name\":\"$2\",\"status\":\"$3\"${4:+,$4}}"
  echo "$line" >>"$jsonl"
  echo "device-check: $line"
}

# run_phase PHASE NAME SECONDS FUNCTION: FUNCTION under `timeout`, output to OUT/phaseN-NAME.log.
run_phase() {
  local phase=$1 name=$2 seconds=$3 fn=$4 log="phase$1-$2.log" start rc status
  start=$(date +%s)
  echo "device-check: phase $phase ($name), at most ${seconds}s, log $out/$log"
  if timeout --kill-after=10 "$seconds" bash -c "$fn" >"$out/$log" 2>&1; then rc=0; else rc=$?; fi
  case $rc in
    0) status=ok ;;
    124 | 137) status="timed out" ;;
    77) status=skipped ;;                                 # the phase's tool is not installed
    78) status="skipped: the tool refuses this device" ;;  # compute-sanitizer under gVisor
    *) status=failed ;;
  esac
  record "$phase" "$name" "$status" "\"rc\":$rc,\"seconds\":$(($(date +%s) - start)),\"log\":\"$log\""
  tail -n 5 "$out/$log" | sed 's/^/    /'
}

export out build tests_bin probe_bin pagoda_bin llama_dir

phase_environment() {
  set -uo pipefail
  local rc=0
  echo "== nvidia-smi"
  nvidia-smi || rc=1
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv || true
  command -v nvcc >/dev/null && nvcc --version | tail -n 2
  for bin in "$tests_bin" "$probe_bin"; do
    echo "== ldd $bin"
    ldd "$bin" || rc=1
    if ldd "$bin" | grep -q 'not found'; then
      echo "MISSING LIBRARIES for $bin:"
      ldd "$bin" | grep 'not found'
      rc=1
    fi
  done
  # cuBLAS is opened at run time (src/cuda/cublas_library.h): where would it come from?
  echo "== cuBLAS (LD_LIBRARY_PATH=$LD_LIBRARY_PATH)"
  local found=""
  for d in ${LD_LIBRARY_PATH//:/ }; do [[ -e $d/libcublas.so.13 ]] && found=$d/libcublas.so.13 && break; done
  echo "${found:-libcublas.so.13 not on LD_LIBRARY_PATH}"
  [[ -n $found ]] || ldconfig -p 2>/dev/null | grep -q 'libcublas\.so\.13' || rc=1
  ldconfig -p 2>/dev/null | grep -E 'libcublas(Lt)?\.so' || true
  command -v compute-sanitizer >/dev/null && compute-sanitizer --version | tail -n 1
  echo "== probe"
  "$probe_bin" | tee "$out/probe.jsonl" || rc=1
  return $rc
}

phase_tests() {
  set -uo pipefail
  # The forward pass's tests are phase 2's: their faults leave a process's context unusable.
  "$tests_bin" --gtest_filter='-CudaForward.*' --gtest_output="json:$out/cuda_tests.json" --gtest_color=no
  local rc=$?
  # Skips on a GPU machine mean the tests saw no device: not a pass.
  if [[ -f "$out/cuda_tests.json" ]] && command -v python3 >/dev/null; then
    python3 - "$out/cuda_tests.json" "$out/phases.jsonl" <<'EOF' || rc=1
import json, sys
r = json.load(open(sys.argv[1]))
cases = [c for s in r["testsuites"] for c in s["testsuite"]]
skipped = sum(1 for c in cases if c.get("result") == "SKIPPED")
failed = sum(1 for c in cases if c.get("failures"))
print(f"tests: {len(cases)} run, {failed} failed, {skipped} skipped")
with open(sys.argv[2], "a") as f:
    f.write(json.dumps({"phase": 1, "name": "kernel-tests-counts", "tests": len(cases), "failed": failed,
                        "skipped": skipped}, separators=(",", ":")) + "\n")
sys.exit(1 if failed or skipped else 0)
EOF
  fi
  return $rc
}

phase_sanitizers() {
  set -uo pipefail
  local cs
  cs=$(command -v compute-sanitizer || true)
  [[ -z "$cs" && -x /usr/local/cuda/bin/compute-sanitizer ]] && cs=/usr/local/cuda/bin/compute-sanitizer
  if [[ -z "$cs" ]]; then
    echo "compute-sanitizer not installed: skipped"
    return 77
  fi
  local rc=0
  # The subsets: every kernel family on its smaller shapes (memcheck is ~10-100x slower);
  # racecheck where shared memory is used (rms_norm's block sum, attention's tiles).
  local mem_filter=${PAGODA_SANITIZER_FILTER:-'CudaKv.*:CudaNorm.*:CudaRope.*:CudaActivations.*:CudaAttention.DecodeOfOneToken:CudaAttention.SlidingWindowDropsOldPositions:CudaWeights.EmbedRows*:CudaWeights.Matvec*:CudaGemm.*:CudaSampling.MatchesTheReference'}
  local race_filter=${PAGODA_RACECHECK_FILTER:-'CudaNorm.*:CudaAttention.DecodeOfOneToken:CudaAttention.SlidingWindowDropsOldPositions:CudaSampling.MatchesTheReference'}
  local tmp=$out/sanitizer-output.txt
  echo "== memcheck: $mem_filter"
  "$cs" --tool memcheck --error-exitcode 1 "$tests_bin" --gtest_filter="$mem_filter" --gtest_color=no 2>&1 |
    tee "$tmp" || rc=1
  # Some machines' runtimes (gVisor) have compute-sanitizer refuse the device outright: not a finding.
  if grep -q "Device not supported" "$tmp"; then return 78; fi
  echo "== racecheck: $race_filter"
  "$cs" --tool racecheck --error-exitcode 1 "$tests_bin" --gtest_filter="$race_filter" --gtest_color=no || rc=1
  return $rc
}

# Phase 2: the forward pass against the CPU's, then the real faults, each fault in a
# process of its own (a trap or a hung kernel leaves the process's context unusable).
phase_parity() {
  set -uo pipefail
  local rc=0
  local log=$out/parity-tests.txt
  : >"$log"
  "$tests_bin" --gtest_filter='CudaForward.*-CudaForward.ATrap*:CudaForward.AHung*' \
    --gtest_output="json:$out/parity.json" --gtest_color=no 2>&1 | tee -a "$log" || rc=1
  "$tests_bin" --gtest_filter='CudaForward.ATrapEndsEveryRequestAndLosesTheDevice' --gtest_color=no 2>&1 |
    tee -a "$log" || rc=1
  timeout 60 "$tests_bin" --gtest_filter='CudaForward.AHungKernelLosesTheDeviceAtTheDeadline' --gtest_color=no 2>&1 |
    tee -a "$log" || rc=1
  # A skip on the GPU machine means the tests saw no device: not a pass.
  if grep -q '^\[  SKIPPED \]' "$log"; then echo "tests skipped: no device seen"; rc=1; fi
  return $rc
}

# synthetic_file SHAPE TYPE: the path of a synthetic model file in $PAGODA_DEVICE_TMP (default
# /tmp), written by `pagoda synth` the first time a phase asks and kept for the others and a rerun.
synthetic_file() {
  local f=${PAGODA_DEVICE_TMP:-/tmp}/pagoda-$1-$2.gguf
  [[ -s $f ]] || "$pagoda_bin" synth "$1" "$f" --type "$2" >&2 || return 1
  echo "$f"
}

# Phase 3: decode at batch 1, 32 and 128 and prefill, on 1B- and 8B-shaped synthetic files
# (Q4_K, Q8_0), and at batch 1 and 32 on a mixture of experts and a hybrid (Q4_K), through the
# engine (`pagoda bench --device cuda`); the files are written here, in $PAGODA_DEVICE_TMP
# (default /tmp), and kept for a rerun.
phase_speed() {
  set -uo pipefail
  local pagoda=$pagoda_bin rc=0 f
  local common=(--device cuda --skip-reserve --gpu-memory-utilization 0.85)
  for shape in 1b 8b; do
    for type in q4_k q8_0; do
      f=$(synthetic_file "$shape" "$type") || { rc=1; continue; }
      echo "== $shape $type: mode tok/s ttft_p50 ttft_p99 itl_p50 itl_p99 preempt hit util overhead wall errors"
      for batch in 1 32 128; do
        echo "-- decode, batch $batch"
        "$pagoda" bench -m "$f" "${common[@]}" --requests "$batch" --max-num-seqs "$batch" \
          --min-prompt 128 --max-prompt 128 --min-output 128 --max-output 128 || rc=1
      done
      echo "-- prefill: 64 prompts of 512, one token each"
      "$pagoda" bench -m "$f" "${common[@]}" --requests 64 --max-num-seqs 64 --max-batched-tokens 8192 \
        --min-prompt 512 --max-prompt 512 --min-output 1 --max-output 1 || rc=1
    done
  done
  # A mixture of experts (Qwen3-30B-A3B's layers, 8 of its 48; 128 experts, 8 a token) and a
  # hybrid (Qwen3.5-9B's, 8 of its 32: Gated DeltaNet layers, their state on the device).
  for shape in 30b-a3b 9b-hybrid; do
    f=$(synthetic_file "$shape" q4_k) || { rc=1; continue; }
    echo "== $shape q4_k: mode tok/s ttft_p50 ttft_p99 itl_p50 itl_p99 preempt hit util overhead wall errors"
    for batch in 1 32; do
      echo "-- decode, batch $batch"
      "$pagoda" bench -m "$f" "${common[@]}" --requests "$batch" --max-num-seqs "$batch" \
        --min-prompt 128 --max-prompt 128 --min-output 128 --max-output 128 || rc=1
    done
  done
  # What CUDA graphs and sampling on the device give: the rows above again without them.
  f=$(synthetic_file 1b q4_k) || return 1
  echo "== 1b q4_k without graphs or device sampling: mode tok/s ttft_p50 ttft_p99 itl_p50 itl_p99 ..."
  for batch in 1 32; do
    echo "-- decode, batch $batch, --enforce-eager"
    "$pagoda" bench -m "$f" "${common[@]}" --enforce-eager --requests "$batch" --max-num-seqs "$batch" \
      --min-prompt 128 --max-prompt 128 --min-output 128 --max-output 128 || rc=1
  done
  echo "-- decode, batch 128, --cpu-sampling"
  "$pagoda" bench -m "$f" "${common[@]}" --cpu-sampling --requests 128 --max-num-seqs 128 \
    --min-prompt 128 --max-prompt 128 --min-output 128 --max-output 128 || rc=1
  # What sharing a KV head's K/V reads among its query heads gives (paged_attention's blocks of
  # a KV head's query heads, the default past 128 token-KV-head pairs): the 8B Q4_K batch-128
  # row again with a block per query head.
  f=$(synthetic_file 8b q4_k) || return 1
  echo "== 8b q4_k, a block per query head (PAGODA_CUDA_ATTENTION_HEADS=1): mode tok/s ttft_p50 ..."
  echo "-- decode, batch 128"
  PAGODA_CUDA_ATTENTION_HEADS=1 "$pagoda" bench -m "$f" "${common[@]}" --requests 128 --max-num-seqs 128 \
    --min-prompt 128 --max-prompt 128 --min-output 128 --max-output 128 || rc=1
  # What decode's dp4a on 8-bit activations gives (mmvq, the default for mmq's formats): one
  # 8B Q4_K stream again with matvec's F32 activations.
  echo "== 8b q4_k, one stream with F32 activations (PAGODA_CUDA_MATVEC_F32=1): mode tok/s ttft_p50 ..."
  echo "-- decode, batch 1"
  PAGODA_CUDA_MATVEC_F32=1 "$pagoda" bench -m "$f" "${common[@]}" --requests 1 --max-num-seqs 1 \
    --min-prompt 128 --max-prompt 128 --min-output 128 --max-output 128 || rc=1
  # What splitting a long context over blocks gives (flash-decoding, the default below 128
  # blocks): one stream at a 3,900-token context, split (8 ways) and not.
  echo "== 8b q4_k, one stream at a 3,900-token context: split, then PAGODA_CUDA_ATTENTION_SPLITS=1"
  for splits in 0 1; do
    echo "-- decode, batch 1, PAGODA_CUDA_ATTENTION_SPLITS=$splits (0: the launcher's choice)"
    PAGODA_CUDA_ATTENTION_SPLITS=$splits "$pagoda" bench -m "$f" "${common[@]}" --requests 1 --max-num-seqs 1 \
      --min-prompt 3900 --max-prompt 3900 --min-output 128 --max-output 128 || rc=1
  done
  return $rc
}

# Phase 4: the seeds on a GPU, through the real server and load generator.
phase_serving() {
  set -uo pipefail
  local pagoda=$pagoda_bin rc=0 f
  f=$(synthetic_file 1b q4_k) || return 1
  serve() {  # serve PORTFILE ARGS...: starts a server, waits for /health 200
    local log=$1; shift
    "$pagoda" serve -m "$f" --device cuda --port 0 --log-interval 0 "$@" >"$log" 2>&1 &
    server_pid=$!
    local port=""
    for _ in $(seq 1 300); do
      port=$(grep -oE 'listening on http://[^:]+:[0-9]+' "$log" | grep -oE '[0-9]+$' | head -n 1)
      [[ -n $port ]] && curl -sf "http://127.0.0.1:$port/health" >/dev/null && break
      sleep 0.2
    done
    server_port=$port
  }
  echo "== 128 concurrent clients, 30% hang up"
  serve "$out/serve-crowd.log" --max-num-seqs 128
  "$pagoda" loadgen --port "$server_port" -c 128 -n 1000 --prompt-tokens 64:256 --output-tokens 32:128 \
    --ignore-eos --hangup-fraction 0.3 --json >"$out/crowd.json" || rc=1
  cat "$out/crowd.json"
  curl -s "http://127.0.0.1:$server_port/metrics" | grep -E '^(vllm:num_requests|vllm:kv_cache_usage)' || true
  kill -INT "$server_pid"; wait "$server_pid" || true

  echo "== 30 requests of 351 tokens into a 4,096-token pool"
  serve "$out/serve-pool.log" --kv-cache-tokens 4096 --max-num-seqs 30
  "$pagoda" loadgen --port "$server_port" -c 30 -n 30 --prompt-tokens 351:351 --output-tokens 128:128 --ignore-eos \
    --json >"$out/pool.json" || rc=1
  cat "$out/pool.json"
  kill -INT "$server_pid"; wait "$server_pid" || true

  echo "== a real OOM at a pass under 32 clients (no request lost)"
  serve "$out/serve-oom.log" --inject-faults gpu_oom_at_pass=50
  "$pagoda" loadgen --port "$server_port" -c 32 -n 64 --output-tokens 64:64 --ignore-eos --json >"$out/oom.json" || rc=1
  cat "$out/oom.json"
  grep -E 'out of device memory|preempted' "$out/serve-oom.log" | head -n 3
  kill -INT "$server_pid"; wait "$server_pid" || true

  echo "== a trap at pass 200 under 128 clients: every stream ends, exit code 4, a restart serves"
  serve "$out/serve-trap.log" --inject-faults gpu_trap_at_pass=200 --max-num-seqs 128
  local t0=$(date +%s.%N)
  "$pagoda" loadgen --port "$server_port" -c 128 -n 512 --output-tokens 64:64 --ignore-eos --json \
    --request-timeout 30 >"$out/trap.json" || true
  local code=0
  wait "$server_pid" || code=$?
  echo "exit code $code after $(awk "BEGIN { print $(date +%s.%N) - $t0 }") s"
  [[ $code == 4 ]] || rc=1
  cat "$out/trap.json"
  serve "$out/serve-restart.log"
  curl -sf "http://127.0.0.1:$server_port/v1/completions" -H 'Content-Type: application/json' \
    -d '{"prompt": "Once upon a time", "max_tokens": 8}' || rc=1
  kill -INT "$server_pid"; wait "$server_pid" || true
  return $rc
}

# Phase 5: llama.cpp's CUDA build (scripts/build-llama-cuda.sh) on phase 3's files, in turns
# with Pagoda: llama-bench pp512 / tg128 at depth 0 and 512 (full offload, flash attention)
# against `pagoda bench` at batch 1 with a 16- and a 512-token prompt (its ITL is the decode
# rate at that depth), then both servers under the same `pagoda loadgen` loop at 32 and 128
# streams on the 8B Q4_K file.
phase_llama() {
  set -uo pipefail
  local rc=0 f
  if [[ ! -x $llama_dir/llama-bench || ! -x $llama_dir/llama-server ]]; then
    echo "no llama.cpp CUDA build in $llama_dir (scripts/build-llama-cuda.sh): skipped"
    return 77
  fi
  cat "$llama_dir/VERSION"
  local common=(--device cuda --skip-reserve --gpu-memory-utilization 0.85)
  for shape in 1b 8b; do
    for type in q4_k q8_0; do
      f=$(synthetic_file "$shape" "$type") || { rc=1; continue; }
      echo "== $shape $type: llama-bench pp512, tg128 at depth 0 and 512"
      LD_LIBRARY_PATH="$llama_dir:$LD_LIBRARY_PATH" "$llama_dir/llama-bench" -m "$f" -ngl 99 -fa 1 -p 512 -n 128 \
        -d 0,512 -r 3 -o jsonl | tee -a "$out/llama-bench.jsonl" || rc=1
      for prompt in 16 512; do
        echo "-- pagoda, batch 1, a $prompt-token prompt, 128 tokens: mode tok/s ttft_p50 ttft_p99 itl_p50 itl_p99 ..."
        "$pagoda_bin" bench -m "$f" "${common[@]}" --requests 1 --max-num-seqs 1 --min-prompt "$prompt" \
          --max-prompt "$prompt" --min-output 128 --max-output 128 || rc=1
      done
    done
  done
  # The serving goal's file (8B Q4_K at 128 streams); one round, within the phase's minutes.
  echo "== 8b q4_k: both servers, 32 and 128 streams"
  f=$(synthetic_file 8b q4_k) || return 1
  python3 scripts/serve-vs-llama-server.py --model "$f" --streams 32,128 \
    --pagoda "$pagoda_bin" --llama-server "$llama_dir/llama-server" --threads 8 --prompt-tokens 128:128 \
    --output-tokens 128 --per-stream 2 --slot-context 512 --pagoda-arg=--device --pagoda-arg=cuda \
    --llama-arg=-ngl --llama-arg=99 --llama-arg=-fa --llama-arg=on --json-out "$out/serve-vs-llama-8b.json" || rc=1
  return $rc
}

export -f synthetic_file phase_environment phase_tests phase_sanitizers phase_parity phase_speed phase_serving phase_llama

missing=()
for bin in "$tests_bin" "$probe_bin" "$pagoda_bin"; do [[ -x "$bin" ]] || missing+=("$bin"); done
if ((${#missing[@]})); then
  echo "device-check: ${missing[*]} not found: this build has no CUDA binaries (configure with" \
    "-DPAGODA_CUDA=ON where nvcc is, build pagoda, pagoda_cuda_tests and pagoda_cuda_probe, carry them in" \
    "$build/)" >&2
  record 0 environment "missing binaries" "\"missing\":\"${missing[*]}\""
else
  # Each group within one 10-minute command: "0 1 2" 8.5 minutes at most, "3" 8.5, "5" 4.5, "4" 4.
  wants() { [[ " $phases " == *" $1 "* ]]; }
  wants 0 && run_phase 0 environment 90 phase_environment
  wants 1 && run_phase 1 kernel-tests 120 phase_tests
  wants 1 && run_phase 1 sanitizers 150 phase_sanitizers
  wants 2 && run_phase 2 model-parity 150 phase_parity
  wants 3 && run_phase 3 speed 510 phase_speed
  wants 4 && run_phase 4 serving 240 phase_serving
  wants 5 && run_phase 5 llama-cpp 270 phase_llama
fi
echo "device-check: results in $out (phases.jsonl, probe.jsonl, cuda_tests.json, phase logs)"
# Failure if any phase run did not pass (a skipped tool is not a failure).
! grep -qE '"status":"(failed|timed out|missing binaries)"' "$jsonl"
