#!/usr/bin/env bash
# The GPU machine's check (docs/gpu.md): run in the repository root with the
# CUDA binaries already built (it never builds). Phases, each under its own
# timeout, each appending a JSON line to OUT/phases.jsonl as it ends, so a run
# cut off part way still says what finished:
#   0  environment: nvidia-smi, ldd of the binaries (cuBLAS resolved?), and
#      pagoda_cuda_probe (device-to-device copy bandwidth, cuBLAS F16 GEMM TFLOP/s)
#   1  pagoda_cuda_tests (every kernel against its CPU reference), then
#      compute-sanitizer memcheck and racecheck on a subset, when installed
#   2-4 model parity, speed, serving: not built yet (they need the CUDA
#      runner's device half), recorded as such
#
#   scripts/device-check.sh [OUT]      OUT: $OUT if set, else the argument, else ./device-check-out
#   scripts/device-check.sh --stage    on the build machine: copy the shared libraries the
#                                      binaries need beyond libc, libstdc++ and CUDA into
#                                      BUILD/device-libs, to carry along with them
# Environment: BUILD (default build), PAGODA_SANITIZER_FILTER, PAGODA_RACECHECK_FILTER.
set -euo pipefail

build=${BUILD:-build}
tests_bin=$build/pagoda_cuda_tests
probe_bin=$build/pagoda_cuda_probe
libs_dir=$build/device-libs

if [[ "${1:-}" == "--stage" ]]; then
  mkdir -p "$libs_dir"
  for bin in "$tests_bin" "$probe_bin"; do
    [[ -x "$bin" ]] || { echo "device-check: $bin is not built (configure with -DPAGODA_CUDA=ON, build it)" >&2; exit 1; }
    # Libraries outside the C runtime, the toolchain's and CUDA's own (cuBLAS must come from the GPU machine).
    ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' |
      grep -Ev '/(libc|libm|libdl|librt|libpthread|libgcc_s|libstdc\+\+|ld-linux[^/]*)\.so|/libcublas' |
      while read -r lib; do cp -Lv "$lib" "$libs_dir/"; done
  done
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

export out build tests_bin probe_bin

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
  echo "== cuBLAS (LD_LIBRARY_PATH=$LD_LIBRARY_PATH)"
  ldd "$probe_bin" | grep -E 'libcublas' || { echo "cuBLAS not linked?"; rc=1; }
  ldconfig -p 2>/dev/null | grep -E 'libcublas(Lt)?\.so' || true
  command -v compute-sanitizer >/dev/null && compute-sanitizer --version | tail -n 1
  echo "== probe"
  "$probe_bin" | tee "$out/probe.jsonl" || rc=1
  return $rc
}

phase_tests() {
  set -uo pipefail
  "$tests_bin" --gtest_output="json:$out/cuda_tests.json" --gtest_color=no
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
  local mem_filter=${PAGODA_SANITIZER_FILTER:-'CudaKv.*:CudaNorm.*:CudaRope.*:CudaActivations.*:CudaAttention.DecodeOfOneToken:CudaAttention.SlidingWindowDropsOldPositions:CudaWeights.EmbedRows*:CudaWeights.Matvec*:CudaGemm.*'}
  local race_filter=${PAGODA_RACECHECK_FILTER:-'CudaNorm.*:CudaAttention.DecodeOfOneToken:CudaAttention.SlidingWindowDropsOldPositions'}
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

export -f phase_environment phase_tests phase_sanitizers

missing=()
for bin in "$tests_bin" "$probe_bin"; do [[ -x "$bin" ]] || missing+=("$bin"); done
if ((${#missing[@]})); then
  echo "device-check: ${missing[*]} not found: this build has no CUDA binaries (configure with" \
    "-DPAGODA_CUDA=ON where nvcc is, build pagoda_cuda_tests and pagoda_cuda_probe, carry them in $build/)" >&2
  record 0 environment "missing binaries" "\"missing\":\"${missing[*]}\""
  record 1 kernel-tests "missing binaries"
else
  # 9 minutes at most in all: a GPU session's command may run 10.
  run_phase 0 environment 120 phase_environment
  run_phase 1 kernel-tests 180 phase_tests
  run_phase 1 sanitizers 240 phase_sanitizers
fi
record 2 model-parity "not built yet: needs the CUDA runner's device half"
record 3 speed "not built yet: needs the CUDA runner's device half"
record 4 serving "not built yet: needs the CUDA runner's device half"
echo "device-check: results in $out (phases.jsonl, probe.jsonl, cuda_tests.json, phase logs)"
# Failure if any phase that exists did not pass (skipped and not-built-yet phases are not failures).
! grep -qE '"status":"(failed|timed out|missing binaries)"' "$jsonl"
