#!/usr/bin/env bash
# Second H200 pass for record + the Kineto traces: example 2 (PyTorch) under record with driver API
# records (fp32 device-bound, bf16 framework-bound, slow reads in workers), torch.profiler traces of
# induced cases for the Kineto reader, and the retrieval-latency scenario under record with its trace.
set -uo pipefail
OUT=${OUT:-./gpu-out}; mkdir -p "$OUT"
source .gpu/env.sh
export XDG_CACHE_HOME=/tmp/stalldx-cache
data=$XDG_CACHE_HOME/stalldx/default-food101like-v1
stalldx run --device none --steps 1 --warmup 0 --no-profile > /dev/null 2>&1  # makes the default dataset
summary() { grep -E "processes seen|records lost|exited|killed|steady state:|→|img/s|next:" | cut -c1-400; }
py="env -u LD_LIBRARY_PATH python3 examples/torch/train_resnet50.py --data $data"
{
  date -u +%FT%TZ
  for c in "device-bound|--workers 12" "submission-bf16|--workers 12 --bf16" "retrieval|--workers 8 --read-delay-ms 40"; do
    name=${c%%|*}; args=${c#*|}
    echo "-- $name: $args"
    stalldx record --warmup 3 --trace /tmp/ex2-$name.json -- $py $args 2>&1 | summary
  done
} > "$OUT/examples.txt" 2>&1
stalldx diagnose /tmp/ex2-retrieval.json --warmup 3 > "$OUT/ex2-retrieval-report.txt" 2>&1
{
  for c in "fp32-w16|--workers 16" "decoding-w1|--workers 1 --steps 5" "w0-slow-reads|--workers 0 --read-delay-ms 5 --steps 5" \
           "per-sample-copies|--workers 16 --per-sample-copies"; do
    name=${c%%|*}; args=${c#*|}
    echo "-- $name: $args"; $py $args --kineto /tmp/kineto-$name.pt.trace.json 2>&1 | tail -1
    gzip -f /tmp/kineto-$name.pt.trace.json
  done
} > "$OUT/kineto.txt" 2>&1
tar cf "$OUT/kineto-traces.tar" -C /tmp $(cd /tmp && ls kineto-*.pt.trace.json.gz 2>/dev/null)
printf "retrieval-latency\tconfigs/scenarios/retrieval-latency.toml\tretrieval\n" > /tmp/one.tsv
stalldx eval /tmp/one.tsv --record --out /tmp/evrec --min-accuracy 0 > "$OUT/eval-record.txt" 2>&1
stalldx diagnose /tmp/evrec/retrieval-latency.json --warmup 3 > "$OUT/retrieval-latency-record-report.txt" 2>&1
echo done >> "$OUT/eval-record.txt"
