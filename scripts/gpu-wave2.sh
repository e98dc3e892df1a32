#!/usr/bin/env bash
# The H200 checks of the second wave in one call (device time is scarce): GPU tests, the seed workload
# unprofiled, the scenario matrix (new: launch-bound, cpu-oversubscribed) with trimmed traces, a sweep
# and a tune of the seed workload on the same grid (tune's predictions against the sweep's measures).
# Expects the bundle in .gpu/; logs to $OUT (at most 8 files come back).
set -uo pipefail
OUT=${OUT:-./gpu-out}; mkdir -p "$OUT"
source .gpu/env.sh
export XDG_CACHE_HOME=/tmp/stalldx-cache
{ nvidia-smi -L; nproc; date -u +%FT%TZ; } > "$OUT/when.txt"
gpu_test > "$OUT/gpu_test.txt" 2>&1; echo "gpu_test rc=$?" >> "$OUT/gpu_test.txt"
seed="--config configs/seed-resnet50-food101-b128.toml"
{
  for i in 1 2 3; do stalldx run $seed --steps 30 --no-profile 2>&1 | grep -E "result|step  "; done
  echo "== launch-bound"; stalldx run --config configs/scenarios/launch-bound.toml 2>&1 | grep -E "note|SYNTHETIC|steady state|→|next:" | head -12
  echo "== cpu-oversubscribed"; stalldx run --config configs/scenarios/cpu-oversubscribed.toml 2>&1 | grep -E "steady state|→|next:" | head -8
} > "$OUT/runs.txt" 2>&1
stalldx eval configs/scenarios-h200.tsv --out /tmp/eval --keep-steps 4 --min-accuracy 0 > "$OUT/eval.txt" 2>&1
tar czf "$OUT/eval.tgz" -C /tmp/eval $(cd /tmp/eval && ls *.trimmed.json confusion.*) 2>/dev/null
grid="--workers ${WORKERS:-1,2,4,6,8,12,16} --prefetch ${PREFETCH:-1,2,4} --repeat 3"
stalldx sweep $seed --steps 10 $grid --out /tmp/sweep > "$OUT/sweep.txt" 2>&1
cp /tmp/sweep/sweep.csv "$OUT/sweep.csv"
stalldx tune $seed --steps 10 $grid > "$OUT/tune.txt" 2>&1
stalldx run $seed --steps 10 --trace /tmp/seed16.json > /dev/null 2>&1
stalldx diagnose /tmp/seed16.json --no-summaries --what-if ${WORKERS:-1,2,4,6,8,12,16} 2>&1 | sed -n '/^what-if/,$p' > "$OUT/whatif.txt"
echo done
