#!/usr/bin/env bash
# Train the extractive reader's span model on a lent GPU machine (device tool), from the windows that
# `ragfunnel train reader --save-examples .device/examples.json.gz` built here, and send back the weights.
#
# Carry: .device (base/: the bundled MiniLM in half precision, `RAGFUNNEL_BASE_MODEL`; whl/: pydantic for Python
# 3.12; examples.json.gz). Each VARIANT is "name rank lr epochs groups layers" (rank 0: whole weights; layers 0: all
# six). Every variant's report and log come back in one file each; the weights of the two variants whose kept epoch
# has the best pooled validation F1 come back, in parts over 15 MB (join them with cat). Finish here:
# ragfunnel train reader --examples .device/examples.json.gz --weights W.pt
# Locally (a smoke test): PY=.venv/bin/python DEVICE=cpu EXAMPLES=small.json.gz OUT=/tmp/out bash this "a 0 1e-4 1 small 0"
set -uo pipefail
PY=${PY:-python3}
EXAMPLES=${EXAMPLES:-.device/examples.json.gz}
DEVICE=${DEVICE:-cuda}
if [ "$PY" = python3 ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .device/whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD/src
  nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
fi
export RAGFUNNEL_BASE_MODEL=${RAGFUNNEL_BASE_MODEL:-$PWD/.device/base} PYTHONUNBUFFERED=1 RAGFUNNEL_HOME=/tmp/rf-home
mkdir -p /tmp/weights
began=$(date +%s)
DEADLINE=${DEADLINE:-100000}  # seconds after which no variant starts, and a running one is stopped
for variant in "${@:-full 0 1e-4 8 full 0}"; do
  read -r name rank lr epochs groups layers <<< "$variant"
  start=$(date +%s)
  left=$(( DEADLINE - start + began ))
  if [ "$left" -le 30 ]; then echo "== $name: skipped (deadline)" | tee -a "$OUT/logs.txt"; continue; fi
  timeout "$left" "$PY" -m ragfunnel.cli train reader --examples "$EXAMPLES" --device "$DEVICE" --quiet \
    --lora-rank "$rank" --lr "$lr" --epochs "$epochs" --groups "$groups" --train-layers "$layers" \
    --save-weights "/tmp/weights/$name.pt" > "/tmp/weights/$name.json" 2> "/tmp/weights/$name.log"
  code=$?
  echo "== $name ($variant): exit $code in $(( $(date +%s) - start )) s" | tee -a "$OUT/logs.txt"
  cat "/tmp/weights/$name.log" >> "$OUT/logs.txt"
  tail -n 3 "/tmp/weights/$name.log"
done
"$PY" - "$OUT" <<'EOF'
import json, pathlib, shutil, subprocess, sys
out = pathlib.Path(sys.argv[1])
reports = {}
for f in sorted(pathlib.Path("/tmp/weights").glob("*.json")):
    try:
        r = json.loads(f.read_text())
    except ValueError:
        continue
    best = r.get("best_epoch")
    if best and (f.with_suffix(".pt")).exists():
        reports[f.stem] = {**r, "kept": r["validation"][best - 1]}
(out / "reports.json").write_text(json.dumps(reports, indent=1))
ranked = sorted(reports, key=lambda n: -reports[n]["kept"]["pooled_f1"])
for n in ranked:
    print(n, reports[n]["kept"], "train_seconds", reports[n].get("train_seconds"))
for n in ranked[:2]:
    subprocess.run(["split", "-b", "15000000", "-d", f"/tmp/weights/{n}.pt", str(out / f"{n}.pt.part")], check=True)
EOF
ls -la "$OUT"
