#!/bin/bash
# Train an experiment's declared full-mode models AND run its analysis on a GPU machine, for experiments whose
# weights are too large to bring back from a call (dai-momentum: 600 MB with Adam's state; a call returns 64 MiB).
# docs/reproduce.md, "Full mode on a GPU machine". Writes to $OUT: EXP.log, EXP-train.json (one record per model, as
# benchmarks/train_declared.py writes), EXP.tar.gz (the run directory and the models' summaries and metrics, no weights).
#   BUDGET_S: seconds for the whole (default 480): training stops at BUDGET_S - EVAL_S (default 90) and the
#   experiment then resumes what is left on the GPU and evaluates, killed at BUDGET_S + 40.
# Usage there (icgd, its wheels and python benchmarks/gpu_payload.py's .gpu/site on PYTHONPATH):
#   bash benchmarks/gpu_evaluate.sh dai-momentum
# Beside benchmarks/gpu_train.sh in the same call, start CUDA's MPS daemon first (nvidia-cuda-mps-control -d, default
# pipe directory) and give gpu_train.sh MPS=0: every CUDA process is then a client and their kernels run side by side.
# Dry run without a GPU: DEVICE=cpu BUDGET_S=100 MODE=--smoke bash benchmarks/gpu_evaluate.sh dai-momentum
set -u
exp="$1"; out="${OUT:-gpu-evaluate}"; budget="${BUDGET_S:-480}"; device="${DEVICE:-cuda}"
work="/tmp/gpu-evaluate/$exp"; mkdir -p "$out" "$work"
export PYTHONUNBUFFERED=1
(
  python3 benchmarks/train_declared.py "$exp" --device "$device" --cache "$work/_train" \
    --budget $((budget - ${EVAL_S:-90} - SECONDS)) --workers "${WORKERS:-2}" --json "$out/$exp-train.json"
  echo "[$exp] training ended at ${SECONDS}s"
  timeout $((budget + 40 - SECONDS)) python3 -m icgd.cli reproduce "$exp" ${MODE:-} --device "$device" --quiet \
    --cache "$work/_train" --trained-on "$device" --out "$work/$exp"
  echo "[$exp] reproduce rc $? at ${SECONDS}s"
) > "$out/$exp.log" 2>&1
tar czf "$out/$exp.tar.gz" -C "$work" --exclude='*.safetensors' --exclude=.locks .
tail -3 "$out/$exp.log"
