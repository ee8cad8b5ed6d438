#!/usr/bin/env bash
# One command: install ragfunnel with its test extras into .venv and run the test suite (slow evals excluded;
# run them with: .venv/bin/python -m pytest -m slow).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install --quiet --upgrade pip
.venv/bin/pip install --quiet -e '.[test]'
exec .venv/bin/python -m pytest "$@"
