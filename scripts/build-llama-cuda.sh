#!/usr/bin/env bash
# llama.cpp v0.5.0's CUDA build, for issue 40's side-by-side on the GPU machine
# (docs/gpu.md, device-check phase 5; never CI). Builds llama-bench and
# llama-server with -DGGML_CUDA=ON for one architecture (sm_90: the H100 and
# H200) from the source bundle of node-llama-cpp@3.22.1, outside the
# repository, then copies the two binaries and their shared libraries,
# stripped, into OUT (default build/llama-cuda: ignored by git, and small
# enough to carry to the device beside Pagoda's binaries). On 2 cores the
# build takes about 20 minutes (18 for ggml-cuda's ~250 kernel files); a rerun reuses it.
#
#   scripts/build-llama-cuda.sh [OUT]
#   env: LLAMA_SRC (/tmp/llama.cpp-v0.5.0: the clone, shared with
#        bench_vs_llama_cpp.sh), LLAMA_CUDA_BUILD (/tmp/llama-cuda: the build
#        folder), CUDA_ARCH (90), LLAMA_TGZ (see scripts/lib/llama-cpp-source.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/llama-cuda}
src=${LLAMA_SRC:-/tmp/llama.cpp-v0.5.0}
bld=${LLAMA_CUDA_BUILD:-/tmp/llama-cuda}
arch=${CUDA_ARCH:-90}
command -v nvcc >/dev/null || { echo "build-llama-cuda: nvcc is not on the PATH" >&2; exit 1; }

# shellcheck source=scripts/lib/llama-cpp-source.sh
source scripts/lib/llama-cpp-source.sh
llama_cpp_source "$src"
# GGML_NATIVE=OFF: the GPU machine's CPU is not this one. Shared libraries, so
# the CUDA kernels are in one file for both binaries. libggml-cuda needs the
# driver's libcuda.so.1, which a machine without a GPU lacks: the binaries
# link with its symbols left to the GPU machine's driver (--allow-shlib-undefined).
cmake -S "$src" -B "$bld" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DGGML_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES="$arch" -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=ON \
  -DCMAKE_EXE_LINKER_FLAGS="-Wl,--allow-shlib-undefined" >/dev/null
echo "building llama-bench and llama-server for sm_$arch in $bld ($(nproc) jobs)"
cmake --build "$bld" --target llama-bench llama-server -j "$(nproc)" >/dev/null

rm -rf "$out"
mkdir -p "$out"
cp "$bld/bin/llama-bench" "$bld/bin/llama-server" "$out/"
# Their libraries from the build (libllama, libggml*, libmtmd, ...); CUDA's own
# (cudart, cuBLAS) come from the GPU machine's toolkit, as Pagoda's cuBLAS does.
for bin in "$out/llama-bench" "$out/llama-server"; do
  LD_LIBRARY_PATH="$bld/bin" ldd "$bin" | awk -v d="$bld/" '$3 ~ "^"d {print $3}' | while read -r lib; do
    cp -Ln "$lib" "$out/"
  done
done
strip --strip-unneeded "$out"/*
git -C "$src" describe --tags --always >"$out/VERSION" 2>/dev/null || echo v0.5.0 >"$out/VERSION"
echo "sm_$arch" >>"$out/VERSION"
du -sh "$out"
ls -la "$out"
