#!/usr/bin/env bash
# One command: install ragfunnel into .venv, index the Friends corpus, answer a search.
# Data: $RAGFUNNEL_DATA, else ../shared/data beside the checkout. Index: $RAGFUNNEL_HOME (default ~/.ragfunnel).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install --quiet --upgrade pip
.venv/bin/pip install --quiet -e .
.venv/bin/ragfunnel index
.venv/bin/ragfunnel search "${1:-Who did Rachel dump at the altar?}" --k 5
