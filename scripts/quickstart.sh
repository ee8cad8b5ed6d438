#!/usr/bin/env bash
# One command: install ragfunnel and the local LLM into .venv, index the Friends corpus, train the answerability gate,
# run a search and answer a question with citations.
# Data: $RAGFUNNEL_DATA, else ../shared/data beside the checkout. Index: $RAGFUNNEL_HOME (default ~/.ragfunnel).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install --quiet --upgrade pip
.venv/bin/pip install --quiet -e '.[serve,rerank,gate,files]'
bash scripts/install_llm.sh .venv
.venv/bin/ragfunnel index
.venv/bin/ragfunnel train gate --quiet  # the answerability gate of `ask` (~10 s), saved beside the index
.venv/bin/ragfunnel search "${1:-Who did Rachel dump at the altar?}" --k 5
.venv/bin/ragfunnel ask "${2:-Who was Joey in love with?}"
