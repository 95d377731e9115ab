#!/usr/bin/env bash
# Train experiments in full mode and keep each model in the model store (zoo/) as soon as its training
# finishes, one commit per model, so that a machine that goes away mid-run loses at most the model in
# training (docs/store.md, "Filling it").
#
#   bash tools/fill_store.sh EXP [EXP ...]       e.g. bash tools/fill_store.sh oswald-softmax oswald-depth
#
# Runs into runs/fill/ (the model cache runs/fill/_train is shared by the experiments and resumed by a
# second call); commits only zoo/. Run it from a clean checkout: each model records the commit that trained it.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$#" -ge 1 ] || { echo "usage: bash tools/fill_store.sh EXP [EXP ...]" >&2; exit 2; }
cache=runs/fill/_train
mkdir -p "$cache"

store_finished() {
  local exp=$1 run key
  for run in "$cache"/*/; do
    run=${run%/}
    [ -f "$run/summary.json" ] && [ ! -e "$run/.from-store" ] || continue
    grep -q '"status": "completed"' "$run/summary.json" || continue
    key=$(basename "$run")
    [ -d "zoo/$key" ] && continue
    icgd store add "$run"
    git add zoo && git commit -q -m "zoo: $key, trained in full mode by icgd reproduce $exp" -- zoo
  done
}

for exp in "$@"; do
  icgd reproduce "$exp" --out "runs/fill/$exp" --cache "$cache" --quiet > "runs/fill/$exp.log" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do sleep 60; store_finished "$exp"; done
  wait "$pid" || { echo "$exp failed: runs/fill/$exp.log" >&2; store_finished "$exp"; exit 1; }
  store_finished "$exp"
done
