#!/bin/bash
# Train an experiment's declared full-mode models on a GPU machine within a time budget (docs/reproduce.md,
# "Full mode on a GPU machine"), and bring back the model cache for `icgd reproduce EXP --trained-on cuda` elsewhere.
#   GPU: the models matching GPU_MATCH (default: all) that the model store (zoo/) does not hold, costliest first,
#        GPU_WORKERS at a time (default 2; 9 with MPS, which lets the workers' small kernels run side by side instead of time-sliced);
#   CPU: the models matching CPU_MATCH (default: none) on the same machine's cores, CPU_WORKERS x CPU_THREADS (default 1 with MPS, else 2),
#        cached under the CPU fingerprint, so they resume or are used on any CPU machine; run at nice CPU_NICE (default 10).
# At BUDGET_S seconds from the start (default 450) every worker checkpoints and stops. Writes to $OUT: log.txt, gpu.json and
# cpu.json (one record per model: status, steps, seed-steps/s, path), finished.tar.gz (the models that finished, or
# diverged with their record) and cache.tar.gz (the rest of the cache: checkpoints to resume from), weights
# included, each in 15 MiB parts
# (NAME.part-aa, -ab, ...) when larger. The finished models come first: a call brings back at most 8 files of
# 16 MiB, 64 MiB together, and a warning says when the parts are more than that.
# Usage: bash benchmarks/gpu_train.sh oswald-depth   (icgd importable: pip install -e . or PYTHONPATH=src)
# Dry run without a GPU: DEVICE=cpu BUDGET_S=20 bash benchmarks/gpu_train.sh oswald-depth
set -u
out="${OUT:-gpu-train}"; budget="${BUDGET_S:-450}"; device="${DEVICE:-cuda}"
work=/tmp/gpu-train; cache="$work/_train"
# bad input first, one line and exit code 2 before anything is written: the tarballs, the experiments, the device
for t in ${CACHE_TAR:-}; do
  tar tzf "$t" >/dev/null 2>&1 || { echo "gpu_train.sh: CACHE_TAR: $t is not a readable .tar.gz" >&2; exit 2; }
done
[ "$#" -ge 1 ] || { echo "usage: bash benchmarks/gpu_train.sh EXP [EXP ...]" >&2; exit 2; }
plans=""  # each experiment's plan, kept for the log below (a plan takes seconds to make)
for e in "$@"; do
  plans+=$(python -m icgd.cli reproduce "$e" --plan --device "$device")$'\n' || exit 2  # icgd's own line on stderr
done
# an experiment whose models cannot be trained ahead (pretrain=False, or none declared) is named with why
python benchmarks/train_declared.py "$@" --device "$device" --cache "$cache" --budget 1 --check || exit 2
mkdir -p "$out" "$cache"
for t in ${CACHE_TAR:-}; do tar xzf "$t" -C "$work"; done  # resume an earlier call's cache (one or more tarballs)
exec > >(tee -a "$out/log.txt") 2>&1
python -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no CUDA')"
workers="${GPU_WORKERS:-2}"  # time-sliced: two keep the GPU busy while one is on the host
if [ "$device" = cuda ] && command -v nvidia-cuda-mps-control >/dev/null && [ "${MPS:-1}" = 1 ]; then
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  if nvidia-cuda-mps-control -d && timeout 30 python -c "import torch; torch.ones(8, device='cuda').sum().item()"; then
    echo "MPS on"; workers="${GPU_WORKERS:-9}"
  else
    echo "MPS did not start: off"; echo quit | nvidia-cuda-mps-control 2>/dev/null
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
  fi
else
  echo "MPS: not available"
fi
printf '%s' "$plans" | grep -E '^[a-z].*steps x batch'
(while sleep 60; do nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader 2>/dev/null \
   | sed "s/^/[${SECONDS}s] gpu /"; done) &
monitor=$!
left=$((budget - SECONDS))  # BUDGET_S counts from this script's start
threads="${CPU_THREADS:-$([ "$workers" -gt 2 ] && echo 1 || echo 2)}"
python benchmarks/train_declared.py "$@" --device "$device" --cache "$cache" --budget "$left" \
  --workers "$workers" --match "${GPU_MATCH:-}" --json "$out/gpu.json" &
gpu=$!
if [ -n "${CPU_MATCH:-}" ]; then
  # niced: the GPU workers' kernel launches are CPU-bound and come first
  nice -n "${CPU_NICE:-10}" python benchmarks/train_declared.py "$@" --device cpu --cache "$cache" --budget "$left" \
    --workers "${CPU_WORKERS:-6}" --threads "$threads" --match "$CPU_MATCH" --json "$out/cpu.json" &
  cpu=$!
  wait $cpu
fi
wait $gpu
pkill -P $monitor 2>/dev/null; kill $monitor 2>/dev/null  # its sleep too: it holds the output open
[ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ] && echo quit | nvidia-cuda-mps-control
# finished as the store takes it (icgd.train.runs.finished: completed, or diverged with its record)
finished=() rest=()
while read -r state run; do
  if [ "$state" = F ]; then finished+=("_train/$run"); else rest+=("_train/$run"); fi
done < <(python - "$cache" <<'PY'
import sys
from pathlib import Path
from icgd.train.runs import finished
for run in sorted(p for p in Path(sys.argv[1]).iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
    print("F" if finished(run) else "P", run.name)
PY
)
[ "${#finished[@]}" -gt 0 ] && tar czf "$out/finished.tar.gz" -C "$work" --exclude=.locks "${finished[@]}"
[ "${#rest[@]}" -gt 0 ] && tar czf "$out/cache.tar.gz" -C "$work" --exclude=.locks "${rest[@]}"
# a call brings back files of at most 16 MiB: a larger tarball comes back in parts (cat NAME.part-* > NAME)
for f in "$out/finished.tar.gz" "$out/cache.tar.gz"; do
  if [ -f "$f" ] && [ "$(stat -c %s "$f")" -gt $((15 * 1024 * 1024)) ]; then split -b 15M "$f" "$f.part-" && rm "$f"; fi
done
ls -la "$out"
n=$(find "$out" -maxdepth 1 -type f | wc -l); bytes=$(du -cb "$out"/* | tail -1 | cut -f1)
if [ "$n" -gt 8 ] || [ "$bytes" -gt $((64 * 1024 * 1024)) ]; then
  echo "warning: $n files, $((bytes / 1048576)) MiB in $out: more than a call brings back (8 files, 64 MiB); pack less (the partial runs in cache.tar.gz) by hand from $work"
fi
echo "done at ${SECONDS}s"
