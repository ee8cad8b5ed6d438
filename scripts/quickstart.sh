#!/usr/bin/env bash
# One command: install ragfunnel into .venv, index the Friends corpus, train the answerability gate, run a search and
# answer a question from the selected evidence lines (no LLM needed); then install the local LLM (llama-cpp-python
# compiles from source the first time, ~8 min on 2 cores) and answer the question again with it.
# Data: $RAGFUNNEL_DATA, else ../shared/data beside the checkout. Index: $RAGFUNNEL_HOME (default ~/.ragfunnel).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install --quiet --upgrade pip
.venv/bin/pip install --quiet -e '.[serve,rerank,gate,files]'
.venv/bin/ragfunnel index
.venv/bin/ragfunnel train gate --quiet  # the answerability gate of `ask` (~10 s), saved beside the index
.venv/bin/ragfunnel search "${1:-Who did Rachel dump at the altar?}" --k 5
# a cited answer before any LLM is installed: the best lines of the top 20 scenes
.venv/bin/ragfunnel ask "${2:-Who was Joey in love with?}" --reader evidence
bash scripts/install_llm.sh .venv
.venv/bin/ragfunnel ask "${2:-Who was Joey in love with?}"
