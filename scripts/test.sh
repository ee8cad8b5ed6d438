#!/usr/bin/env bash
# One command: install ragfunnel with its test and training extras into .venv and run the test suite.
# Slow evaluations and real-LLM tests are excluded (run them with: .venv/bin/python -m pytest -m "slow or llm").
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install --quiet --upgrade pip
# torch first, so that pip takes the CPU build instead of pulling CUDA packages for transformers
.venv/bin/pip install --quiet torch==2.13.0
.venv/bin/pip install --quiet -e '.[test,train]'
exec .venv/bin/python -m pytest "$@"
