# shellcheck shell=bash
# Sourced by the scripts that build llama.cpp for a comparison
# (bench_vs_llama_cpp.sh, build-llama-cuda.sh; never CI).
#
#   llama_cpp_source DEST
# clones llama.cpp v0.5.0 into DEST (outside this repository) from the source
# bundle in the npm package node-llama-cpp@3.22.1 (llama/gitRelease.bundle),
# unless DEST is already a clone. The tarball: $LLAMA_TGZ, else
# /work/llama-src/node-llama-cpp-3.22.1.tgz if present, else `npm pack`.
llama_cpp_source() {
  local dest=$1 work tgz
  case "$(realpath -m "$dest")" in "$(git rev-parse --show-toplevel 2>/dev/null || echo /nonexistent)"/*)
    echo "llama.cpp's source must be outside the repository: $dest" >&2
    return 2
    ;;
  esac
  [[ -d "$dest/.git" ]] && return 0
  work=$(mktemp -d /tmp/llama-npm.XXXXXX)
  tgz=${LLAMA_TGZ:-}
  if [[ -z "$tgz" && -f /work/llama-src/node-llama-cpp-3.22.1.tgz ]]; then tgz=/work/llama-src/node-llama-cpp-3.22.1.tgz; fi
  if [[ -z "$tgz" ]]; then
    (cd "$work" && npm pack node-llama-cpp@3.22.1 --silent >/dev/null)
    tgz="$work/node-llama-cpp-3.22.1.tgz"
  fi
  tar xzf "$tgz" -C "$work" package/llama/gitRelease.bundle package/llama/llama.cpp.info.json
  echo "llama.cpp: $(tr -d '\n ' <"$work/package/llama/llama.cpp.info.json")"
  rm -rf "$dest"
  git -c advice.detachedHead=false clone -q "$work/package/llama/gitRelease.bundle" "$dest"
  rm -rf "$work"
}
