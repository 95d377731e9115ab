#!/bin/bash
# The device checks, in one run on a CUDA machine (docs/concepts/training.md, "The CUDA graph step"):
#   1. the CUDA graph step's capture test (tests/unit/test_graphed.py, skipped without CUDA elsewhere), and the
#      Triton kernels compiled for the GPU against the generic path (benchmarks/triton_check.py; if they
#      disagree, the rest runs with ICGD_TRITON=0 and says so);
#   2. side-by-side speed: the graph step, the eager step and the same math in JAX (where importable), 1 and 8
#      seeds, the three workloads (train_speed.json);
#   3. the full linear suite (`icgd verify oswald --retrain`, full mode: trained here, not read from the model
#      store; FULL= overrides the flag) on the GPU, its models trained side by side
#      (oswald.json: claims, seconds, profile; oswald-run.tar.gz: its run directories and model cache), within what is
#      left of BUDGET_S seconds (default 560), then, time permitting, the quick suite (oswald-quick.json).
# If the capture test fails, the suites run with ICGD_CUDA_GRAPH=0 (the eager step) and say so.
# DEVICE=cpu FULL=--smoke QUICK=--smoke STEPS=3 TRITON_CHECK="--batch 4 --seeds 2 --reps 1": a dry run without a GPU.
# Usage: bash benchmarks/gpu_check.sh   (expects icgd importable: pip install -e . or PYTHONPATH=src)
set -u
out="${OUT:-gpu-check}"
budget="${BUDGET_S:-560}"
workers="${WORKERS:-6}"
device="${DEVICE:-cuda}"  # a dry run without a GPU: see above
steps="${STEPS:-600}"  # the issue's table: 600 timed steps
work=/tmp/gpu-check; rm -rf "$work"; mkdir -p "$out" "$work"
export XLA_PYTHON_CLIENT_PREALLOCATE=false  # JAX takes memory as it needs it, beside torch
python -c "import torch; print(torch.__version__, torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no CUDA')" | tee "$out/device.txt"
timeout 120 python -m pytest -q -x tests/unit/test_graphed.py -p no:cacheprovider > "$work/test_graphed.txt" 2>&1
rc=$?; tail -15 "$work/test_graphed.txt" | tee -a "$out/device.txt"; echo "test_graphed rc=$rc" | tee -a "$out/device.txt"
[ "$rc" = 0 ] || export ICGD_CUDA_GRAPH=0
timeout 150 python benchmarks/triton_check.py --device "$device" ${TRITON_CHECK:-} --profile > "$out/triton_check.txt" 2> "$work/triton_check.err"
rc=$?; sed -n '1,/^largest/p' "$out/triton_check.txt" | tee -a "$out/device.txt"; tail -3 "$work/triton_check.err"
echo "triton_check rc=$rc (kernel profiles in triton_check.txt)" | tee -a "$out/device.txt"
[ "$rc" = 0 ] || export ICGD_TRITON=0
timeout 300 python benchmarks/train_speed.py --device "$device" --seeds 1,8 --steps "$steps" --naive-steps 3 --json \
  > "$out/train_speed.json" 2> "$out/train_speed.err"; echo "train_speed rc=$? at ${SECONDS}s" | tee -a "$out/device.txt"
python - "$out/train_speed.json" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except ValueError:
    sys.exit("no train_speed.json")
for r in d["models"]:
    print(f"{r['name']:<10} {r['seeds']:>2} seeds: engine {r['seed_steps_per_s']:>9} ({r['step']}), eager "
          f"{r['eager_seed_steps_per_s']}, without Triton {r['no_triton_seed_steps_per_s']}, JAX "
          f"{r['jax_seed_steps_per_s']}, engine/JAX {r['ratio_to_jax']}; {r['backend_reason']}")
PY
left=$((budget - SECONDS))
echo "oswald full: ${left}s left, $workers workers, ICGD_CUDA_GRAPH=${ICGD_CUDA_GRAPH:-1}, ICGD_TRITON=${ICGD_TRITON:-1}" \
  | tee -a "$out/device.txt"
if [ "$left" -gt 30 ]; then
  timeout "$left" python -m icgd.cli verify oswald ${FULL---retrain} --device "$device" --workers "$workers" --quiet --json \
    --out "$work/oswald" > "$out/oswald.json" 2> "$out/suites.err"
  echo "oswald full rc=$? at ${SECONDS}s" | tee -a "$out/device.txt"
else
  echo "oswald full: not run, no time left in BUDGET_S=$budget" | tee -a "$out/device.txt"
fi
left=$((budget - SECONDS))
if [ "$left" -gt 30 ]; then
  timeout "$left" python -m icgd.cli verify oswald ${QUICK:---quick} --device "$device" --workers "$workers" --quiet --json \
    --out "$work/oswald-quick" > "$out/oswald-quick.json" 2>> "$out/suites.err"
  echo "oswald quick rc=$? at ${SECONDS}s" | tee -a "$out/device.txt"
fi
# what the runs wrote (the trained weights too, where they fit in 15 MB; 8 files come back at most)
tar czf "$out/oswald-run.tar.gz" -C "$work" . 2>/dev/null
[ "$(stat -c %s "$out/oswald-run.tar.gz")" -lt 15000000 ] || \
  tar czf "$out/oswald-run.tar.gz" -C "$work" --exclude='*.safetensors' . 2>/dev/null
ls -la "$out" | tee -a "$out/device.txt"
