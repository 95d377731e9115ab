#!/usr/bin/env bash
# Train experiments in full mode and keep each model in the model store (zoo/) as soon as its training
# finishes, one commit per model, so that a machine that goes away mid-run loses at most the model in
# training (docs/store.md, "Filling it").
#
#   bash tools/fill_store.sh EXP [EXP ...]       e.g. bash tools/fill_store.sh oswald-softmax oswald-depth
#   WORKERS=2 [MATCH=REGEX] [BUDGET_S=S] bash tools/fill_store.sh EXP [EXP ...]
#       trains only the models (of all the experiments at once, those matching MATCH) in WORKERS processes of
#       THREADS (default 1) torch threads each, by benchmarks/train_declared.py, stopping them with a checkpoint
#       at BUDGET_S seconds; does not run the experiments. Whether two 1-thread workers beat one 2-thread
#       training depends on the models (docs/concepts/experiments.md: the momentum suite's 1.26x, a 5-layer LSA's 0.78x).
#
# Runs into runs/fill/ (the model cache runs/fill/_train is shared by the experiments and resumed by a
# second call); commits only zoo/. Run it from a clean checkout: each model records the commit that trained it.
# Every PARK_EVERY_S seconds (default 1800), and when the training stops (BUDGET_S, an error), each unfinished
# training with a checkpoint is parked in the store (`icgd store park`) and committed, so that a machine that
# goes away loses at most that much training: the next call, on any machine, resumes it from the store.
set -euo pipefail
cd "$(dirname "$0")/.."
# this checkout's code, whatever `icgd` an editable install elsewhere points to (its store and its commit are
# the ones recorded)
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
python3 -c 'import icgd, pathlib, sys; sys.exit(0 if pathlib.Path(icgd.__file__).resolve().is_relative_to(pathlib.Path("src").resolve()) else 1)' \
  || { echo "fill_store.sh: icgd is not imported from $PWD/src" >&2; exit 2; }
[ "$#" -ge 1 ] || { echo "usage: bash tools/fill_store.sh EXP [EXP ...]" >&2; exit 2; }
[[ "${PARK_EVERY_S:-1800}" =~ ^[1-9][0-9]*$ ]] \
  || { echo "fill_store.sh: PARK_EVERY_S is a whole number of seconds, not '${PARK_EVERY_S}'" >&2; exit 2; }
python3 - "$@" <<'PY' || exit 2  # every experiment known, before anything is made
import sys
from icgd.experiments.runner import get_experiment
for name in sys.argv[1:]:
    try:
        get_experiment(name)
    except ValueError as err:
        sys.exit(f"fill_store.sh: {err}")
PY
cache=runs/fill/_train
mkdir -p "$cache"

store_finished() {  # store_finished HOW: HOW is the command the commit messages say trained the models
  local how=$1 run key
  for run in "$cache"/*/; do
    run=${run%/}
    [ -f "$run/summary.json" ] && [ ! -e "$run/.from-store" ] || continue
    # finished, or diverged with its record (step and seeds: the experiment reads them): the test of
    # icgd.train.runs.finished, in grep, as a Python call would import torch once a minute beside the training
    grep -q '"status": "completed"' "$run/summary.json" || grep -q '"diverged": {' "$run/summary.json" || continue
    key=$(basename "$run")
    [ -d "zoo/$key" ] && continue
    python3 -m icgd.cli store add "$run"
    git add zoo
    git diff --cached --quiet -- zoo && { echo "fill_store.sh: $key was not added to $PWD/zoo" >&2; exit 1; }
    git commit -q -m "zoo: $key, trained in full mode by $how" -- zoo
  done
  for ref in "$cache"/_references/*.json; do  # fitted references (docs/store.md, "Fitted references")
    [ -f "$ref" ] || continue
    key=$(basename "$ref" .json)
    [ -f "zoo/references/$key.json" ] && continue
    python3 -m icgd.cli store add "$ref"
    git add zoo
    git commit -q -m "zoo: fitted reference $key, from $how in full mode" -- zoo
  done
}

park_unfinished() {  # park_unfinished HOW: keep every unfinished training's resume state in the store (zoo/parked/)
  local how=$1 run key step
  for run in "$cache"/*/; do
    run=${run%/}
    [ -f "$run/checkpoint.json" ] && [ ! -e "$run/.from-store" ] || continue
    # finished or diverged (store_finished's test): stored, not parked; a stopped run's summary says "interrupted"
    [ -f "$run/summary.json" ] && grep -q -e '"status": "completed"' -e '"diverged": {' "$run/summary.json" && continue
    key=$(basename "$run")
    step=$(python3 -m icgd.cli store park "$run") || { echo "fill_store.sh: $key was not parked" >&2; continue; }
    git add zoo
    # the same step parked before: nothing to commit
    git diff --cached --quiet -- zoo || git commit -q -m "zoo: ${step%%,*} (${how}), to resume on the next machine" -- zoo
  done
}

train_and_store() {  # train_and_store HOW LOG COMMAND...: COMMAND in the background, storing what finishes once a minute
  local how=$1 log=$2 pid rc=0 t=0 parked=0 every=${PARK_EVERY_S:-1800}
  shift 2
  "$@" > "$log" 2>&1 &
  pid=$!
  # polled every 2 s, so that a command refusing its arguments is reported at once
  while kill -0 "$pid" 2>/dev/null; do
    sleep 2; t=$((t + 2))
    [ $((t % 60)) -eq 0 ] && store_finished "$how"
    [ $((t - parked)) -ge "$every" ] && { park_unfinished "$how"; parked=$t; }
  done
  wait "$pid" || rc=$?
  # exit code 2: the command refused its arguments before training (one line, in the log): passed on as it is
  [ "$rc" -eq 2 ] && { tail -n 1 "$log" >&2; exit 2; }
  store_finished "$how"
  park_unfinished "$how"
  [ "$rc" -eq 0 ] || { echo "$how failed (exit code $rc): $log" >&2; exit 1; }
}

if [ -n "${WORKERS:-}" ]; then
  train_and_store "benchmarks/train_declared.py $* --workers $WORKERS --threads ${THREADS:-1}" runs/fill/declared.log \
    python3 benchmarks/train_declared.py "$@" --device cpu --cache "$cache" --budget "${BUDGET_S:-1e9}" \
    --workers "$WORKERS" --threads "${THREADS:-1}" --match "${MATCH:-}"
  exit 0
fi

for exp in "$@"; do
  train_and_store "icgd reproduce $exp" "runs/fill/$exp.log" \
    python3 -m icgd.cli reproduce "$exp" --out "runs/fill/$exp" --cache "$cache" --quiet
done
