#!/usr/bin/env bash
# The H200 checks of `stalldx record` in one call (device time is scarce), most important first: GPU
# tests; example 1 (C++ loader) and example 2 (PyTorch ResNet-50) under record for each induced class;
# the reference pipeline's scenario matrix under record (eval --record); torch.profiler traces of
# example 2 for the Kineto reader; record's overhead on the seed workload (alternating pairs).
# Expects the bundle in .gpu/; logs to $OUT (at most 8 files come back).
set -uo pipefail
OUT=${OUT:-./gpu-out}; mkdir -p "$OUT"
source .gpu/env.sh
export XDG_CACHE_HOME=/tmp/stalldx-cache
data=$XDG_CACHE_HOME/stalldx/default-food101like-v1
{ nvidia-smi -L; nproc; date -u +%FT%TZ; python3 -c 'import torch, torchvision; print("torch", torch.__version__, "torchvision", torchvision.__version__)'
  gpu_test 2>&1 | tail -4; echo "gpu_test rc=$?"; } > "$OUT/gpu.txt" 2>&1
stalldx run --device none --steps 1 --warmup 0 --no-profile > /dev/null 2>&1  # makes the default dataset
summary() { grep -E "processes seen|never closed|without a push|records lost|exited|killed|steady state:|→|img/s" | cut -c1-400; }
{
  echo "== example 1: C++ loader (train_loop), batch 128"
  for c in "retrieval|--workers 16 --read-delay-ms 20 --step-ms 30" "decoding|--workers 1 --steps 6 --warmup 2 --step-ms 30" \
           "submission|--workers 16 --pageable --per-sample --sync --step-ms 5" "submission-launch|--workers 16 --launches 3000" \
           "device-bound|--workers 16 --step-ms 80"; do
    name=${c%%|*}; args=${c#*|}; w=3; [[ $args == *"--warmup 2"* ]] && w=2
    echo "-- $name: $args"
    stalldx record --warmup $w --trace /tmp/ex1-$name.json -- train_loop --data $data --steps 12 $args 2>&1 | summary
  done
  echo "== example 2: PyTorch ResNet-50 (train_resnet50.py), batch 128"
  for c in "device-bound|--workers 12" "retrieval|--workers 8 --read-delay-ms 40" "decoding|--workers 1 --steps 5" \
           "submission|--workers 12 --per-sample-copies"; do
    name=${c%%|*}; args=${c#*|}
    echo "-- $name: $args"
    stalldx record --warmup 3 --trace /tmp/ex2-$name.json -- env -u LD_LIBRARY_PATH python3 examples/torch/train_resnet50.py --data $data $args 2>&1 | summary
  done
} > "$OUT/examples.txt" 2>&1
tar czf "$OUT/example-traces.tgz" -C /tmp $(cd /tmp && ls ex1-*.json ex2-device-bound.json ex2-decoding.json 2>/dev/null) 2>/dev/null
grep -v -E "^(seed-long|retrieval-cold-cache)\b" configs/scenarios-h200.tsv > /tmp/matrix.tsv
stalldx eval /tmp/matrix.tsv --record --out /tmp/evrec --min-accuracy 0 > "$OUT/eval-record.txt" 2>&1
{
  for c in "device-bound|--workers 12" "decoding|--workers 1 --steps 5"; do
    name=${c%%|*}; args=${c#*|}
    env -u LD_LIBRARY_PATH python3 examples/torch/train_resnet50.py --data $data $args --kineto /tmp/kineto-$name.pt.trace.json 2>&1 | tail -2
  done
} > "$OUT/kineto.txt" 2>&1
tar czf "$OUT/kineto-traces.tgz" -C /tmp $(cd /tmp && ls kineto-*.json 2>/dev/null) 2>/dev/null
seed="--config configs/seed-resnet50-food101-b128.toml --steps 30"
{
  for i in 1 2 3 4 5; do
    a=$(stalldx run $seed --no-profile 2>&1 | grep -oE "result +[0-9,]+ img/s" | grep -oE "[0-9,]+ img" | tr -d ', img')
    b=$(stalldx record --trace /tmp/ov.json -- stalldx run $seed --nvtx-only 2>&1 | grep -oE "result +[0-9,]+ img/s" | grep -oE "[0-9,]+ img" | tr -d ', img')
    echo "pair $i native $a record $b"
  done
} > "$OUT/overhead.txt" 2>&1
echo done >> "$OUT/overhead.txt"
