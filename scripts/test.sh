#!/usr/bin/env bash
# One command: install ragfunnel with its test and training extras and the local LLM into .venv and run the test
# suite, including the three real-LLM regression questions (marker llm, ~2 min). Slow evaluations are excluded
# (run them with: .venv/bin/python -m pytest -m slow).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install --quiet --upgrade pip
# torch first, so that pip takes the CPU build instead of pulling CUDA packages for transformers
.venv/bin/pip install --quiet torch==2.13.0
.venv/bin/pip install --quiet -e '.[test,train,serve,files]'
bash scripts/install_llm.sh .venv
exec .venv/bin/python -m pytest -m "not slow" "$@"
