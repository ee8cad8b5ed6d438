#!/usr/bin/env bash
# One command: install ragfunnel with its test and training extras and the local LLM into .venv and run the whole
# test suite, the three real-LLM regression questions (marker llm, ~2 min) included. The long evaluations are not
# tests: `ragfunnel repro --check` re-runs them (docs/results/registry.toml).
# Python >= 3.11 ($PYTHON, else python3) and the Friends data ($RAGFUNNEL_DATA, else ../shared/data) are checked
# first, in one line each, before any install.
# torch: where pip is not served a CPU wheel, set TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu, or pip
# takes the CUDA build (several GB); see docs/models.md.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"
bash scripts/check_setup.sh "$python"
"$python" -m venv .venv
.venv/bin/pip install --quiet --upgrade pip
# torch first, so that transformers does not pull it (and CUDA packages) from the default index
.venv/bin/pip install --quiet torch==2.13.0 ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"}
.venv/bin/pip install --quiet -e '.[test,train,serve,files]'
bash scripts/install_llm.sh .venv
exec .venv/bin/python -m pytest -m "llm or not llm" "$@"
