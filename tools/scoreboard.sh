#!/usr/bin/env bash
# Run every suite in full mode from the model store at this checkout's commit, one after the other, then
# record the reports as the scoreboard (docs/store.md, "The scoreboard"):
#
#   bash tools/scoreboard.sh [OUT]        (default runs/board)
#   DAI_ARGS="--data bbc-news" bash tools/scoreboard.sh     # narrow source 003 (full mode adds the tweets)
#   SUITES="template theory" bash tools/scoreboard.sh OUT  # some suites only
#
# Each suite runs as `icgd verify SUITE --store-only --json --out OUT/SUITE`, timed by /usr/bin/time -v
# (OUT/SUITE.time; its log OUT/SUITE.log). A second call resumes: a suite whose report was made at this
# commit is kept, and source 003 reads its stage cache (OUT/dai/_train). Refuses to start with uncommitted
# changes to src/ (the scoreboard records one commit). Then `icgd scoreboard OUT/*` regenerates the pages.
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
git diff --quiet HEAD -- src || { echo "scoreboard.sh: src/ has uncommitted changes; commit them first" >&2; exit 2; }
out=${1:-runs/board}
head=$(git rev-parse HEAD)
known=$(python3 -c 'from icgd.claims.runner import suite_names; print(" ".join(suite_names()))')
suites=${SUITES:-$known}
for s in $suites; do
  [[ " $known " == *" $s "* ]] || { echo "scoreboard.sh: unknown suite '$s'; known: $known" >&2; exit 2; }
done
mkdir -p "$out"
for s in $suites; do
  if [ -f "$out/$s/claims.json" ] && python3 - "$out/$s/claims.json" "$head" <<'EOF'
import json, sys
sys.exit(0 if json.load(open(sys.argv[1]))["env"]["commit"] == sys.argv[2] else 1)
EOF
  then echo "$s: done at this commit, kept"; continue; fi
  extra=()
  [ "$s" = dai ] && read -r -a extra <<< "${DAI_ARGS:-}"
  echo "$s: $(date -u +%H:%M:%S) start"
  /usr/bin/time -v -o "$out/$s.time" python3 -m icgd.cli verify "$s" --store-only --json --quiet \
    --out "$out/$s" "${extra[@]}" > "$out/$s.json" 2> "$out/$s.log" \
    || { rm -f "$out/$s.json"; echo "$s: failed, see $out/$s.log" >&2; exit 1; }
  echo "$s: $(date -u +%H:%M:%S) done, $(grep -o 'Elapsed.*' "$out/$s.time")"
done
python3 -m icgd.cli scoreboard "$out"/*/
