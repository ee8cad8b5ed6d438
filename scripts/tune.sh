#!/usr/bin/env bash
# After quickstart.sh: the trained path of `--mode accurate`, from scratch, on FriendsQA dev minus the 800-question
# sample (see docs/reranker.md). On 2 cores: bi-encoder fine-tuning ~20 min, re-embedding the index with it
# ~13 min, LambdaMART reranker ~2 min, answerability gate ~10 s.
set -euo pipefail
cd "$(dirname "$0")/.."
# torch first, so that pip takes the CPU build instead of pulling CUDA packages for transformers
.venv/bin/pip install --quiet torch==2.13.0
.venv/bin/pip install --quiet -e '.[train,serve]'
.venv/bin/ragfunnel train embedder                   # -> $RAGFUNNEL_HOME/models/embedder (ONNX)
.venv/bin/ragfunnel index --rebuild --encoder tuned  # every dense view re-embedded with it
.venv/bin/ragfunnel train reranker                   # its features read the new vectors
.venv/bin/ragfunnel train gate --quiet
.venv/bin/ragfunnel search "${1:-Who did Rachel dump at the altar?}" --mode accurate --k 5
