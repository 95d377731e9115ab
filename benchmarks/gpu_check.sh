#!/bin/bash
# The device checks of issue 37, in one run on a CUDA machine (prepared without one; see the README's GPU notes):
#   1. the CUDA graph step's capture test (tests/test_graphed.py, skipped without CUDA elsewhere);
#   2. side-by-side speed: the graph step, the eager step and the same math in JAX (where importable), 1 and 8
#      seeds, the three workloads; JSON under $OUT (or ./gpu-check).
# Usage: bash benchmarks/gpu_check.sh   (expects icgd importable: pip install -e . or PYTHONPATH=src)
set -u
out="${OUT:-gpu-check}"
mkdir -p "$out"
python -c "import torch; print(torch.__version__, torch.cuda.get_device_name(0))" | tee "$out/device.txt"
python -m pytest -q -x tests/test_graphed.py -p no:cacheprovider 2>&1 | tail -5 | tee "$out/test_graphed.txt"
python benchmarks/train_speed.py --device cuda --seeds 1,8 --steps 200 --naive-steps 3 --json > "$out/train_speed.json" \
  2> "$out/train_speed.err"; echo "train_speed rc=$?" | tee -a "$out/device.txt"
python - "$out/train_speed.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["models"]:
    print(f"{r['name']:<10} {r['seeds']:>2} seeds: engine {r['seed_steps_per_s']:>9} ({r['step']}), eager "
          f"{r['eager_seed_steps_per_s']}, JAX {r['jax_seed_steps_per_s']}, engine/JAX {r['ratio_to_jax']}")
PY
