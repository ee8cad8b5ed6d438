#!/usr/bin/env bash
# What a set-up needs before any long step (installs, the llama-cpp-python build, a 20-minute index): Python >= 3.11
# and the Friends data. Each missing piece is one line on stderr and exit status 1; nothing is printed when all is
# there. scripts/test.sh and scripts/quickstart.sh call it first.
# Usage: bash scripts/check_setup.sh [PYTHON]    (default: $PYTHON, else python3: the interpreter the venv is made from)
# Data: $RAGFUNNEL_DATA, else ../shared/data beside the checkout (the folder that holds friends/).
set -uo pipefail
cd "$(dirname "$0")/.."
python="${1:-${PYTHON:-python3}}"
if ! command -v "$python" > /dev/null 2>&1; then
  echo "error: $python not found: ragfunnel needs Python >= 3.11 (choose one with PYTHON=/path/to/python3.11)" >&2
  exit 1
fi
if ! "$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' > /dev/null 2>&1; then
  version=$("$python" -c 'import platform; print(platform.python_version())' 2> /dev/null | head -1) || true
  echo "error: $python is Python ${version:-of an unknown version}: ragfunnel needs Python >= 3.11 (choose one with PYTHON=python3.11)" >&2
  exit 1
fi
data="${RAGFUNNEL_DATA:-../shared/data}"
if [ ! -f "$data/friends/friends_corpus.jsonl.gz" ]; then
  echo "error: no Friends data at $data/friends/friends_corpus.jsonl.gz: set RAGFUNNEL_DATA to the folder that holds friends/" >&2
  exit 1
fi
