#!/usr/bin/env bash
# The H200 matrix in one call: GPU tests, the induced-stall scenarios (confusion matrix + trimmed traces),
# the worker x prefetch sweep of the seed workload, and the benchmarks. Logs to $OUT (few files: the
# device tool returns at most 8), traces packed in one tarball.
set -uo pipefail
OUT=${OUT:-./gpu-out}; mkdir -p "$OUT"
source .gpu/env.sh
export XDG_CACHE_HOME=/tmp/stalldx-cache
date -u +%FT%TZ > "$OUT/when.txt"; nvidia-smi -L >> "$OUT/when.txt"
gpu_test > "$OUT/gpu_test.txt" 2>&1; echo "gpu_test rc=$?" >> "$OUT/gpu_test.txt"
stalldx eval ${SCENARIOS:-configs/scenarios-h200.tsv} --out /tmp/eval --keep-steps 4 --min-accuracy 0 > "$OUT/eval.txt" 2>&1
tar czf "$OUT/eval.tgz" -C /tmp/eval $(cd /tmp/eval && ls *.trimmed.json *.log confusion.*) 2>/dev/null
if [ -z "${SKIP_SWEEP:-}" ]; then
  stalldx sweep --batch 128 --output float32 --device-ms 30 --warmup 3 --steps 10 --workers ${SWEEP_WORKERS:-1,2,4,6,8,12,16} --prefetch ${SWEEP_PREFETCH:-1,2,3,4} \
    --repeat 3 --out /tmp/sweep > "$OUT/sweep.txt" 2>&1
  cp /tmp/sweep/sweep.svg /tmp/sweep/sweep.json "$OUT/" 2>/dev/null
  pipeline_bench --max-workers 16 --steps 30 > "$OUT/bench.txt" 2>&1
fi
echo done
