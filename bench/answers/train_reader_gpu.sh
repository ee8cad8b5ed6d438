#!/usr/bin/env bash
# Train the extractive reader's span model on a lent GPU machine (device tool), from the windows that
# `ragfunnel train reader --save-examples .device/examples.json.gz` built here, and send back the weights.
#
# Carry: .device (base/: the bundled MiniLM in half precision, `RAGFUNNEL_BASE_MODEL`; whl/: pydantic for Python
# 3.12; examples.json.gz). Each VARIANT is "name rank lr epochs"; weights over 15 MB come back in parts
# (join them with cat). Finish here: ragfunnel train reader --examples .device/examples.json.gz --weights W.pt
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .device/whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/src RAGFUNNEL_BASE_MODEL=$PWD/.device/base PYTHONUNBUFFERED=1 RAGFUNNEL_HOME=/tmp/rf-home
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
for variant in "${@:-lora16 16 5e-4 8}"; do
  read -r name rank lr epochs <<< "$variant"
  start=$(date +%s)
  python3 -m ragfunnel.cli train reader --examples .device/examples.json.gz --device cuda \
    --lora-rank "$rank" --lr "$lr" --epochs "$epochs" --save-weights "$OUT/$name.pt" > "$OUT/$name.log" 2>&1
  echo "$name: exit $? in $(( $(date +%s) - start )) s"; grep -v "^training:" "$OUT/$name.log"
  if [ -f "$OUT/$name.pt" ] && [ "$(stat -c %s "$OUT/$name.pt")" -gt 15000000 ]; then
    split -b 15000000 -d "$OUT/$name.pt" "$OUT/$name.pt.part" && rm "$OUT/$name.pt"
  fi
done
ls -la "$OUT"
