#!/usr/bin/env bash
# H200 checks of session 4, in two calls (device time is scarce): `gpu-wave4.sh matrix` — GPU tests, the
# scenario matrix natively and under `stalldx record` with per-step agreement, trimmed traces and logs
# of every scenario; `gpu-wave4.sh torch` — example 2 (PyTorch ResNet-50) under record for the cases
# still missing, torch.profiler traces of induced cases, and record's overhead on example 2
# (alternating pairs). Expects the bundle in .gpu/; logs to $OUT (at most 8 files come back).
set -uo pipefail
OUT=${OUT:-./gpu-out}; mkdir -p "$OUT"
source .gpu/env.sh
export XDG_CACHE_HOME=/tmp/stalldx-cache
data=$XDG_CACHE_HOME/stalldx/default-food101like-v1
stalldx run --device none --steps 1 --warmup 0 --no-profile > /dev/null 2>&1  # makes the default dataset
summary() { grep -E "processes seen|records lost|exited|killed|steady state:|→|img/s|next:" | cut -c1-400; }
py="env -u LD_LIBRARY_PATH python3 examples/torch/train_resnet50.py --data $data"
case "${1:-matrix}" in
matrix)
  { nvidia-smi -L; nproc; date -u +%FT%TZ; gpu_test 2>&1 | tail -4; } > "$OUT/gpu.txt" 2>&1
  grep -v -E "^seed-long\b" configs/scenarios-h200.tsv > /tmp/matrix.tsv
  stalldx eval /tmp/matrix.tsv --record --against-native --keep-steps 16 --out /tmp/ev --min-accuracy 0 > "$OUT/eval.txt" 2>&1
  for f in /tmp/ev/*.json; do case $f in *.trimmed.json) ;; *) stalldx diagnose "$f" > "${f%.json}.report.txt" 2>&1 ;; esac; done
  tar czf "$OUT/eval-traces.tgz" -C /tmp/ev $(cd /tmp/ev && ls *.trimmed.json *.log *.report.txt agreement.txt 2>/dev/null)
  ;;
torch)
  {
    date -u +%FT%TZ
    for c in "device-bound-320|--workers 12 --image-size 320" "retrieval|--workers 8 --read-delay-ms 40 --steps 40"; do
      name=${c%%|*}; args=${c#*|}
      echo "-- $name: $args"
      stalldx record --warmup 3 --trace /tmp/ex2-$name.json -- $py $args 2>&1 | summary
    done
  } > "$OUT/examples.txt" 2>&1
  {
    for c in "device-bound-320|--workers 12 --image-size 320" "slow-reads-w8|--workers 8 --read-delay-ms 40 --steps 24" \
             "w0-annotated-reads|--workers 0 --read-delay-ms 20 --steps 5" "fp32-w12-long|--workers 12 --steps 40"; do
      name=${c%%|*}; args=${c#*|}
      echo "-- $name: $args"; $py $args --kineto /tmp/kineto-$name.pt.trace.json 2>&1 | tail -1
      stalldx diagnose /tmp/kineto-$name.pt.trace.json 2>&1 | grep -E "steady state|→|input|note" | head -8
      gzip -f /tmp/kineto-$name.pt.trace.json
    done
  } > "$OUT/kineto.txt" 2>&1
  tar cf "$OUT/kineto-traces.tar" -C /tmp $(cd /tmp && ls kineto-*.pt.trace.json.gz 2>/dev/null)
  {
    for i in 1 2 3 4 5; do
      a=$($py --workers 12 --steps 30 2>&1 | grep -oE "[0-9]+ img/s" | grep -oE "[0-9]+")
      b=$(stalldx record --trace /tmp/ov.json -- $py --workers 12 --steps 30 2>&1 | grep -oE "[0-9]+ img/s" | head -1 | grep -oE "[0-9]+")
      echo "pair $i native $a record $b"
    done
  } > "$OUT/overhead.txt" 2>&1
  ;;
esac
echo done >> "$OUT/gpu-wave4-$1.done"
