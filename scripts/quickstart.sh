#!/usr/bin/env bash
# One command, no LLM: install ragfunnel into .venv, index the Friends corpus (BM25 and the documents first: a search
# works within a minute or two while the vectors of the windows and utterances are embedded),
# train the answerability gate, run a search and answer a question with a cited line. Prints the time of each step.
# The local LLM is its own step, not needed here: bash scripts/install_llm.sh (llama-cpp-python compiles from source,
# ~8-9 min on 2 cores; see the README for answers phrased by it).
# Data: $RAGFUNNEL_DATA, else ../shared/data beside the checkout. Index: $RAGFUNNEL_HOME (default ~/.ragfunnel).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/check_setup.sh python3  # Python >= 3.11 and the Friends data, before any install or build
start=$SECONDS
step() { echo "[quickstart] $1 ($((SECONDS - start)) s)" >&2; }
python3 -m venv .venv
.venv/bin/pip install --quiet --upgrade pip
.venv/bin/pip install --quiet -e '.[serve,rerank,gate,files]'
step "installed"
.venv/bin/ragfunnel index
step "indexed"
.venv/bin/ragfunnel train gate --quiet  # the answerability gate of `ask` (~10 s), saved beside the index
.venv/bin/ragfunnel search "${1:-Who did Rachel dump at the altar?}" --k 5
step "searched"
.venv/bin/ragfunnel ask "${2:-Who was Joey in love with?}"  # the default reader: no LLM needed
step "answered"
echo "[quickstart] done. For answers phrased by the local LLM: bash scripts/install_llm.sh" >&2
