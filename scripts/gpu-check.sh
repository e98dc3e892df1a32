#!/usr/bin/env bash
# The GPU machine's checks, in one go (device time is scarce): GPU tests, the seed workload run,
# submission knobs, benchmarks. Expects a bundle from ../shared/tools/bundle.sh in .gpu/ and writes
# logs to $OUT (default ./gpu-out).
set -uo pipefail
OUT=${OUT:-./gpu-out}; mkdir -p "$OUT"
source .gpu/env.sh
export XDG_CACHE_HOME=/tmp/stalldx-cache
{ nvidia-smi -L; nproc; } > "$OUT/machine.txt" 2>&1
gpu_test > "$OUT/gpu_test.txt" 2>&1; echo "gpu_test rc=$?" >> "$OUT/gpu_test.txt"
seed="--device cuda --batch 128 --workers 16 --prefetch 2 --device-ms 30 --warmup 3"
{
  echo "== seed workload, 30 steps, unprofiled"; stalldx run $seed --steps 30 --no-profile
  echo "== seed workload, profiled, trace"; stalldx run $seed --steps 12 --trace "$OUT/seed.json" | head -60
  echo "== pageable"; stalldx run $seed --steps 12 --memory pageable --no-profile
  echo "== per-sample copies"; stalldx run $seed --steps 12 --copy sample --no-profile
  echo "== pin per batch"; stalldx run $seed --steps 12 --pin-per-batch --no-profile
  echo "== sync every step"; stalldx run $seed --steps 12 --sync-every-step --no-profile
} > "$OUT/runs.txt" 2>&1
range_bench --benchmark_min_time=0.2 > "$OUT/range_bench.txt" 2>&1
pipeline_bench --max-workers 16 --steps 30 > "$OUT/pipeline_bench.txt" 2>&1
echo done
