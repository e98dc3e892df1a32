#!/usr/bin/env bash
# The H200 checks, one mode per device call (device time is scarce; at most 8 files come back from $OUT).
# Expects the bundle in .gpu/ (scripts/bundle-gpu.sh, from a `gpu` preset build) and runs
# from the repository root:
#   gpu-h200.sh check     GPU tests, the seed workload unprofiled/profiled and its submission knobs
#   gpu-h200.sh matrix    the scenario matrix natively and under `stalldx record`, per-step agreement
#   gpu-h200.sh sweep     the seed workload's worker x prefetch sweep, pipeline_bench
#   gpu-h200.sh examples  example 2 (PyTorch ResNet-50) under record for each induced case
#   gpu-h200.sh kineto    torch.profiler traces of induced cases (for tests/data/kineto)
#   gpu-h200.sh perf      pipeline_bench on a ≥ 40 KB set (12,288 files, --detail 1.5) and the seed workload's knee
#   gpu-h200.sh overhead  record's cost on example 2: native / record pairs, ABBA (MAIN_CPU=N: the loop on CPU N)
#   gpu-h200.sh launchcost  the host cost of one kernel launch, natively and under each way of recording
#   gpu-h200.sh cpploader example 1 (train_loop) under record for each induced case, 24 steady steps
#   gpu-h200.sh retrieval example 2's slow-read cases (one worker, eight) under record, traces kept
#   gpu-h200.sh smt       the decode-only loop's 2-thread scaling on pairs of vCPUs (shared cores?)
#   gpu-h200.sh counts    example 2's CUDA calls by name (every call recorded)
#   gpu-h200.sh ranks     NCCL at world size 1 (recorded), then 4 ranks x 4 workers under the host's mpirun
#   gpu-h200.sh closing   example 2 device-bound (30 steps) per step, 5 native/record pairs, the host's CPU topology
#   gpu-h200.sh x2        (nvidia-h200-x2) two ranks, one GPU each, NCCL: balanced seed workload, then rank 1 with
#                         slow reads / one worker / pageable memory; traces trimmed for tests/data
#   gpu-h200.sh zeroconfig  example 3 (train_plain.py: torchvision ImageFolder + DataLoader + ResNet-50, no annotation)
#                         under `stalldx record` with no flags, one run per induced case: headline and per-step verdicts
#   gpu-h200.sh noloader  loops without a DataLoader under record (the hook's backward-pass steps on this torch)
#   gpu-h200.sh hookcost  the Python hook's cost: native / `record --no-cuda` (NVTX + the hook) pairs, alternating,
#                         on example 3 device-bound and decode-bound (ROUNDS, CASES)
#   gpu-h200.sh sampling  record --sample: 120 attach/detach cycles (record_gpu_test), example 2 native / `--sample 5/100`
#                         pairs (ROUNDS, STEPS), full `record` pairs (FULL_ROUNDS), the seed workload native / sampled pairs
#   gpu-h200.sh samplecost  where --sample's cost goes: native / NVTX only / CUPTI never started / one window / 5/100 / finalized
#   gpu-h200.sh detach    native / `--sample 5/100` (CUPTI finalized between windows) pairs on example 2; a crash's stack kept
#   gpu-h200.sh windowcost  example 2 per step around each window of --sample 5/50 (finalized between or not)
#   gpu-h200.sh samplematrix  the scenario matrix natively and under `record --sample 3/6`, per-step agreement (in windows too; and the native traces seen sampled)
#   gpu-h200.sh ddp       torchrun --nproc-per-node 2 DDP ResNet-50 (gloo), rank 1 with slow reads / balanced: under record
#                         and as torch.profiler traces, each diagnosed across ranks
#   gpu-h200.sh devicebound  example 2's device-bound case at 448/384/320 px: verdicts, and the long CUDA calls of 448's stalled steps
set -uo pipefail
OUT=${OUT:-./gpu-out}; mkdir -p "$OUT"
source .gpu/env.sh
export XDG_CACHE_HOME=/tmp/stalldx-cache
export STALLDX_PYTHON_HOOK_DIR=$PWD/profiler/python  # the hook from the carried source tree
data=$XDG_CACHE_HOME/stalldx/default-food101like-v1
stalldx run --device none --steps 1 --warmup 0 --no-profile > /dev/null 2>&1  # makes the default dataset
summary() { grep -E "processes seen|records lost|exited|killed|steady state:|→|img/s|next:" | cut -c1-400; }
py="env -u LD_LIBRARY_PATH python3 examples/torch/train_resnet50.py --data $data"
plain="env -u LD_LIBRARY_PATH python3 examples/torch/train_plain.py --data $data"
seed="--device cuda --batch 128 --workers 16 --prefetch 2 --device-ms 30 --warmup 3"
{ date -u +%FT%TZ; nvidia-smi -L; nproc  # and the CUPTI the bundle loads (its version matters to CUPTI's finalize: docs/record.md)
  ls -l /usr/local/cuda/lib64/libcupti.so*; ls -d /usr/local/cuda/dist-info/*cupti* 2>/dev/null; grep -A3 '"cuda_cupti"' /usr/local/cuda/version.json
  env -u LD_LIBRARY_PATH python3 -c 'import importlib.metadata as m; print([(d.metadata["Name"], d.version) for d in m.distributions() if "cupti" in (d.metadata["Name"] or "").lower()])'
} > "$OUT/machine.txt" 2>&1
case "${1:-check}" in
check)
  gpu_test > "$OUT/gpu_test.txt" 2>&1; echo "gpu_test rc=$?" >> "$OUT/gpu_test.txt"
  {
    echo "== seed workload, 30 steps, unprofiled"; stalldx run $seed --steps 30 --no-profile
    echo "== seed workload, profiled"; stalldx run $seed --steps 12 | head -60
    echo "== pageable"; stalldx run $seed --steps 12 --memory pageable --no-profile
    echo "== per-sample copies"; stalldx run $seed --steps 12 --copy sample --no-profile
    echo "== pin per batch"; stalldx run $seed --steps 12 --pin-per-batch --no-profile
    echo "== sync every step"; stalldx run $seed --steps 12 --sync-every-step --no-profile
    echo "== seed workload under record"; stalldx record --trace /tmp/seed-rec.json -- stalldx run $seed --steps 12 --nvtx-only 2>&1 | summary
  } > "$OUT/runs.txt" 2>&1
  ;;
matrix)
  grep -v -E "^seed-long\b" ${SCENARIOS:-configs/scenarios-h200.tsv} > /tmp/matrix.tsv
  stalldx eval /tmp/matrix.tsv --record --against-native --keep-steps 16 --out /tmp/ev --min-accuracy 0 > "$OUT/eval.txt" 2>&1
  for f in /tmp/ev/*.json; do case $f in *.trimmed.json) ;; *) stalldx diagnose "$f" > "${f%.json}.report.txt" 2>&1 ;; esac; done
  tar czf "$OUT/eval-traces.tgz" -C /tmp/ev $(cd /tmp/ev && ls *.trimmed.json *.log *.report.txt agreement.txt 2>/dev/null)
  ;;
sweep)
  stalldx sweep --batch 128 --output float32 --device-ms 30 --warmup 3 --steps 10 --workers 1,2,4,6,8,12,16 --prefetch 1,2,3,4 \
    --repeat 3 --out /tmp/sweep > "$OUT/sweep.txt" 2>&1
  cp /tmp/sweep/sweep.json /tmp/sweep/sweep.html "$OUT/" 2>/dev/null
  pipeline_bench --max-workers 16 --steps 30 > "$OUT/pipeline_bench.txt" 2>&1
  ;;
perf)
  stalldx dataset /tmp/food49 --per-class 122 --detail 1.5 > "$OUT/dataset.txt" 2>&1
  pipeline_bench --data /tmp/food49 --max-workers 16 --steps 30 > "$OUT/pipeline_bench.txt" 2>&1
  stalldx sweep --batch 128 --output float32 --device-ms 30 --warmup 3 --steps 10 --workers 4,6,8,10,12,16 --prefetch 2 \
    --repeat 3 --out /tmp/sweep-seed > "$OUT/seed-knee.txt" 2>&1
  ;;
final)  # the short version: pipeline_bench on a ≥ 40 KB set, then 4 native/record pairs of example 2
  stalldx dataset /tmp/food49 --per-class 40 --detail 1.5 > "$OUT/dataset.txt" 2>&1
  pipeline_bench --data /tmp/food49 --max-workers 16 --steps 20 > "$OUT/pipeline_bench.txt" 2>&1
  rate() { "$@" 2>&1 | grep -oE "[0-9]+ img/s" | head -1 | grep -oE "[0-9]+"; }
  ex="$py --workers 12 --steps 30"
  for i in 1 2 3 4; do echo "round $i native $(rate $ex) record $(rate stalldx record --trace /tmp/ov.json -- $ex)"; done > "$OUT/overhead.txt" 2>&1
  ;;
examples)
  for c in "decoding|--workers 1" "submission|--per-sample-copies" "device-bound-384|--workers 12 --image-size 384 --steps 30 --loss-every 10" \
           "retrieval-w0|--workers 0 --read-delay-ms 20 --steps 12" "retrieval-w1|--workers 1 --read-delay-ms 8 --steps 16" \
           "retrieval-w8|--workers 8 --read-delay-ms 40 --steps 40"; do
    name=${c%%|*}; args=${c#*|}
    echo "-- $name: $args"
    stalldx record --warmup 3 --trace /tmp/ex2-$name.json -- $py $args 2>&1 | summary
    stalldx diagnose /tmp/ex2-$name.json --no-summaries 2>&1 | grep -E "^ +[0-9]+ " | cut -c1-200
  done > "$OUT/examples.txt" 2>&1
  ;;
zeroconfig)  # example 3 under record with no flags: each case's headline and per-step verdicts (steady = after start-up)
  # 4,545 images: no epoch boundary within a case's steps (the default set's 1,212 make one every 9 steps, whose
  # refill is a real input stall of its own)
  [ -f /tmp/zc-data/manifest.tsv ] || stalldx dataset /tmp/zc-data --classes 101 --per-class 45 > /dev/null 2>&1
  plain="env -u LD_LIBRARY_PATH python3 examples/torch/train_plain.py --data /tmp/zc-data"
  for c in "retrieval-w8|input-bound|--workers 8 --slow-read-ms 40 --steps 40" "decoding-w1|input-bound|--workers 1 --steps 20" \
           "submission-per-sample|submission-bound|--per-sample-copies --steps 20" \
           "device-bound|device-bound|--workers 12 --image-size 384 --loss-every 10 --steps 30" \
           "launch-bound|submission-bound|--workers 12 --bf16 --image-size 96 --loss-every 1 --steps 40"; do
    IFS='|' read -r name want args <<< "$c"
    [[ -n "${CASES:-}" && ",$CASES," != *",$name,"* ]] && continue
    echo "-- $name (want $want): $args"
    stalldx record --trace /tmp/zc-$name.json -- $plain $args > /tmp/zc-$name.txt 2>&1
    grep -E "img/s|steps:|passed over|processes seen|Python hook|^[a-z-]+-bound|^unattributed|steady state:|→" /tmp/zc-$name.txt | cut -c1-400
    gzip -c /tmp/zc-$name.json > "$OUT/zc-$name.json.gz"
  done > "$OUT/zeroconfig.txt" 2>&1
  ;;
noloader)  # loops without a DataLoader (tests/python/unannotated_train.py --no-loader) under record on this host's torch:
           # steps from backward passes, the batch from the optimizer's end (torch >= 2's post-step hook) to the next forward
  t="env -u LD_LIBRARY_PATH python3 tests/python/unannotated_train.py --data /tmp/nl-imgs --no-loader --steps 24"
  for c in "reads|--slow-read-ms 12" "transform|--heavy-transform 6" "threads-transform|--loader-threads 2 --heavy-transform 6" \
           "optimizer|--slow-optimizer 30"; do
    name=${c%%|*}; args=${c#*|}
    echo "-- $name: $args"
    stalldx record --trace /tmp/nl-$name.json -- $t $args > /tmp/nl-$name.txt 2>&1; echo "rc=$?"
    grep -E "steps:|Python hook|^[a-z-]+-bound|steady state:|trained" /tmp/nl-$name.txt | cut -c1-300
  done > "$OUT/noloader.txt" 2>&1
  ;;
hookcost)  # ROUNDS pairs per case, alternating which runs first; the rate is the script's own steady img/s
  [ -f /tmp/zc-data/manifest.tsv ] || stalldx dataset /tmp/zc-data --classes 101 --per-class 45 > /dev/null 2>&1
  plain="env -u LD_LIBRARY_PATH python3 examples/torch/train_plain.py --data /tmp/zc-data"
  rate() { "$@" 2>&1 | grep -oE "[0-9.]+ img/s" | head -1 | grep -oE "[0-9.]+"; }
  for c in "device-bound|--workers 12 --image-size 384 --loss-every 10 --steps 25" "decode-bound|--workers 3 --steps 20"; do
    name=${c%%|*}; args="${c#*|} ${EX_ARGS:-}"  # EX_ARGS: more flags (the last of a flag wins)
    [[ -n "${CASES:-}" && ",$CASES," != *",$name,"* ]] && continue
    for i in ${ROUNDS:-1 2 3 4 5}; do
      if (( i % 2 )); then n=$(rate $plain $args); h=$(rate stalldx record --no-cuda --trace /tmp/hc.json -- $plain $args)
      else h=$(rate stalldx record --no-cuda --trace /tmp/hc.json -- $plain $args); n=$(rate $plain $args); fi
      echo "$name round $i native $n hook $h"
    done
  done > "$OUT/hookcost.txt" 2>&1
  ;;
cpploader)  # example 1 (train_loop: its own std::thread + TurboJPEG loader, plain NVTX) under record, each induced case
  for c in "retrieval|retrieval|--workers 16 --read-delay-ms 20 --step-ms 30" "decoding|decoding|--workers 1 --step-ms 30" \
           "submission|submission|--pageable --per-sample --sync --float --workers 16 --step-ms 10" "launch-rate|submission|--launches 3000" \
           "device-bound|device-bound|--step-ms 80"; do
    IFS='|' read -r name want args <<< "$c"
    [[ -n "${CASES:-}" && ",$CASES," != *",$name,"* ]] && continue  # CASES=a,b: those cases alone
    echo "-- $name ($want): $args"
    stalldx record --warmup 3 --trace /tmp/ex1-$name.json -- train_loop --data $data --steps 27 --warmup 3 $args 2>&1 | summary
    echo "   steps not $want:"
    stalldx diagnose /tmp/ex1-$name.json --warmup 3 --no-summaries 2>&1 | grep -E "^ +[0-9]+ " | grep -v " $want " | cut -c1-220 | head -5
  done > "$OUT/cpploader.txt" 2>&1
  ;;
retrieval)  # example 2's slow reads: one worker (every step waits) and eight (batches arrive in bursts); traces kept
  for c in "retrieval-w1|--workers 1 --read-delay-ms 8 --steps 16" "retrieval-w8|--workers 8 --read-delay-ms 40 --steps 40"; do
    name=${c%%|*}; args=${c#*|}
    echo "-- $name: $args"
    stalldx record --warmup 3 --trace /tmp/ex2-$name.json -- $py $args 2>&1 | summary
    gzip -c /tmp/ex2-$name.json > "$OUT/ex2-$name.json.gz"
  done > "$OUT/retrieval.txt" 2>&1
  ;;
kineto)
  for c in "device-bound-448|--workers 12 --image-size 448" "w0-annotated-reads|--workers 0 --read-delay-ms 10" "w0-decoding|--workers 0" \
           "slow-reads-w8|--workers 8 --read-delay-ms 40 --steps 24"; do
    name=${c%%|*}; args=${c#*|}
    echo "-- $name: $args"; $py $args --kineto /tmp/kineto-$name.pt.trace.json 2>&1 | tail -1
    stalldx diagnose /tmp/kineto-$name.pt.trace.json 2>&1 | grep -E "steady state|→|input|note|^ +[0-9]+ " | cut -c1-220 | head -30
    gzip -f /tmp/kineto-$name.pt.trace.json; cp /tmp/kineto-$name.pt.trace.json.gz "$OUT/"
  done > "$OUT/kineto.txt" 2>&1
  ;;
overhead)  # MAIN_CPU=N: the loop's thread on CPU N alone in both runs of a pair (the vCPUs differ 1.5x in speed); EX_ARGS: more flags; REC_ARGS: record's
  rate() { "$@" 2>&1 | grep -oE "[0-9]+ img/s" | head -1 | grep -oE "[0-9]+"; }
  ex="$py --workers 12 --steps 30 ${MAIN_CPU:+--main-cpu $MAIN_CPU} ${EX_ARGS:-}"
  for i in ${ROUNDS:-1 2 3 4 5 6}; do  # ABBA: odd rounds native first, even rounds record first (drift cancels)
    if (( i % 2 )); then n=$(rate $ex); r=$(rate stalldx record ${REC_ARGS:-} --warmup 3 --trace /tmp/ov.json -- $ex)
    else r=$(rate stalldx record ${REC_ARGS:-} --warmup 3 --trace /tmp/ov.json -- $ex); n=$(rate $ex); fi
    echo "round $i native $n record $r"
  done > "$OUT/overhead.txt" 2>&1
  for f in /tmp/ov.json; do
    echo "== $f"; stalldx diagnose $f 2>&1 | grep -E "steady state|→|coverage|confidence" | cut -c1-300
  done >> "$OUT/overhead.txt"
  ;;
sampling)
  if [ -z "${NO_GPU_TEST:-}" ]; then  # NO_GPU_TEST=1: the throughput pairs alone
    STALLDX_BINARY=$(command -v stalldx) CUDA_WINDOWS=$(command -v cuda_windows) record_gpu_test > "$OUT/record_gpu_test.txt" 2>&1
    echo "record_gpu_test rc=$?" >> "$OUT/record_gpu_test.txt"
  fi
  rate() { "$@" 2>&1 | grep -oE "[0-9]+ img/s" | head -1 | grep -oE "[0-9]+"; }
  ex="$py --workers 12 --steps ${STEPS:-200} ${MAIN_CPU:+--main-cpu $MAIN_CPU}"
  sampled="stalldx record ${REC_ARGS:---sample 5/100} --warmup 3 --trace /tmp/sample.json --live-json /tmp/live.jsonl --"
  srate() { timeout ${RUN_TIMEOUT:-200} $sampled $ex > /tmp/sampled-$1.log 2>&1; echo "rc=$?" >> /tmp/sampled-$1.log; grep -oE "[0-9]+ img/s" /tmp/sampled-$1.log | head -1 | grep -oE "[0-9]+"; }
  for i in ${ROUNDS:-1 2 3 4 5 6 7}; do  # ABBA; a sampled run that prints no rate leaves its log's tail
    if (( i % 2 )); then n=$(rate $ex); r=$(srate $i); else r=$(srate $i); n=$(rate $ex); fi
    echo "round $i native $n sampled $r"
    [ -n "$r" ] || { echo "  sampled round $i failed:"; grep -vE "^ +[0-9]+ +[0-9.]+ " /tmp/sampled-$i.log | tail -12 | cut -c1-300; }
  done > "$OUT/sample-overhead.txt" 2>&1
  for i in ${FULL_ROUNDS-1 2 3}; do
    if (( i % 2 )); then n=$(rate $ex); r=$(rate stalldx record --warmup 3 --trace /tmp/full.json -- $ex); else r=$(rate stalldx record --warmup 3 --trace /tmp/full.json -- $ex); n=$(rate $ex); fi
    echo "full round $i native $n record $r"
  done >> "$OUT/sample-overhead.txt" 2>&1
  for i in ${SEED_ROUNDS-1 2 3}; do
    n=$(rate stalldx run $seed --steps 100 --no-profile); r=$(rate stalldx record --sample 5/100 --trace /tmp/seed-sample.json -- stalldx run $seed --steps 100 --nvtx-only)
    echo "seed round $i native $n sampled $r"
  done >> "$OUT/sample-overhead.txt" 2>&1
  python3 scripts/step_times.py /tmp/sample.json >> "$OUT/sample-overhead.txt" 2>&1  # the last sampled run: what each window cost, and where
  { stalldx diagnose /tmp/sample.json | head -12; stalldx diagnose /tmp/sample.json | grep -E "carried|host records" | head -5; tail -3 /tmp/live.jsonl
    ls -la /tmp/sample.json /tmp/full.json /tmp/seed-sample.json; } > "$OUT/sample-report.txt" 2>&1
  ;;
samplecost)  # where --sample's cost goes on example 2: native against NVTX + hook only, CUPTI never started
            # (--on-demand), one window then none (5/1000), 5/100, 5/100 finalizing between windows; ROUNDS
  ex="$py --workers 12 --steps ${STEPS:-120}"
  rate() { timeout ${RUN_TIMEOUT:-120} "$@" > /tmp/sc.log 2>&1; r=$(grep -oE "[0-9]+ img/s" /tmp/sc.log | head -1 | grep -oE "[0-9]+")
           [ -n "$r" ] && echo "$r" || { echo "-"; grep -vE "^ +[0-9]+ +[0-9.]+ " /tmp/sc.log | tail -40 | cut -c1-300 >> "$OUT/samplecost-failures.txt"; }; }
  rec="stalldx record --warmup 3 --trace /tmp/sc.json"
  for i in ${ROUNDS:-1 2 3}; do
    echo "round $i native $(rate $ex) nvtx $(rate $rec --no-cuda -- $ex) ondemand $(rate $rec --on-demand -- $ex)" \
         "one-window $(rate $rec --sample 5/1000 -- $ex) records-off $(rate $rec --sample 5/100 --no-cupti-detach -- $ex)" \
         "detach $(STALLDX_CRASH_BACKTRACE=1 PYTHONFAULTHANDLER=1 rate $rec --sample 5/100 -- $ex)"
  done > "$OUT/samplecost.txt" 2>&1
  ;;
detach)  # the CUPTI detach's safety and cost on example 2: native / `--sample 5/100` (finalized between windows) pairs, ABBA;
         # a crash writes its native stack and the last finalize's thread (STALLDX_CRASH_BACKTRACE) to a kept log
  ex="$py --workers 12 --steps ${STEPS:-120}"
  rate() { timeout ${RUN_TIMEOUT:-120} "$@" > /tmp/dt.log 2>&1; echo "rc=$?" >> /tmp/dt.log; r=$(grep -oE "[0-9]+ img/s" /tmp/dt.log | head -1 | grep -oE "[0-9]+")
           [ -n "$r" ] && echo "$r" || { echo "-"; cp /tmp/dt.log "$OUT/detach-fail-$(date +%s).log"; }; }
  det="stalldx record --sample 5/100 --warmup 3 --trace /tmp/dt.json --"
  for i in ${ROUNDS:-1 2 3 4}; do
    if (( i % 2 )); then n=$(rate $ex); d=$(STALLDX_CRASH_BACKTRACE=1 rate $det $ex); else d=$(STALLDX_CRASH_BACKTRACE=1 rate $det $ex); n=$(rate $ex); fi
    echo "round $i native $n detach $d"
  done > "$OUT/detach.txt" 2>&1
  ;;
windowcost)  # where a window's cost lands on example 2: per-step start-to-start times around each window
            # (scripts/step_times.py), finalizing between windows or not; a native run's rate beside them
  ex="$py --workers 12 --steps ${STEPS:-200}"
  for c in "detach|" "records-off|--no-cupti-detach" "detach2|" "native|"; do
    name=${c%%|*}; args=${c#*|}
    echo "== $name ${args}"
    if [ $name = native ]; then timeout ${RUN_TIMEOUT:-150} $ex 2>&1 | grep -E "img/s"; continue; fi
    STALLDX_CRASH_BACKTRACE=1 timeout ${RUN_TIMEOUT:-150} stalldx record --sample ${PLAN:-5/50} $args --warmup 3 --trace /tmp/wc-$name.json -- $ex > /tmp/wc-$name.log 2>&1
    rc=$?; echo "rc=$rc"; grep -E "img/s|steady state:|windows|carried" /tmp/wc-$name.log | cut -c1-300 | head -8
    [ $rc = 0 ] || cp /tmp/wc-$name.log "$OUT/windowcost-$name-rc$rc.log"
    python3 scripts/step_times.py /tmp/wc-$name.json
  done > "$OUT/windowcost.txt" 2>&1
  ;;
samplematrix)  # ONLY="a|b": those scenarios alone; KEEP=1: their traces and logs come back (evs.tgz)
  grep -v -E "^seed-long\b" ${SCENARIOS:-configs/scenarios-h200.tsv} | grep -E "^(#|${ONLY:-[a-z]})" > /tmp/matrix.tsv
  stalldx eval /tmp/matrix.tsv --record --record-args "${MATRIX_REC_ARGS:---sample 3/6}" --against-native --sampled-view 3/6 --out /tmp/evs --min-accuracy 0 > "$OUT/eval-sampled.txt" 2>&1
  cp /tmp/evs/agreement.txt "$OUT/agreement-sampled.txt" 2>/dev/null
  cat /tmp/evs/agreement-sampled-view.txt >> "$OUT/agreement-sampled.txt" 2>/dev/null  # the native traces seen sampled: same steps, same run
  if [ -n "${KEEP:-}" ]; then  # each trace's per-step diagnosis, and the sampled traces (the native ones are large)
    for f in /tmp/evs/*.json; do echo "== $f"; stalldx diagnose --warmup 3 "$f" | cut -c1-260; done > "$OUT/evs-diagnoses.txt" 2>&1
    (cd /tmp/evs && tar czf "$OUT/evs-sampled.tgz" $(ls *.json | grep -v native) *.log)
  fi
  ;;
launchcost)  # the host cost of one launch (bench/launch_cost.py) natively and under each way of recording; PIN=N: on CPU N
  lc="env -u LD_LIBRARY_PATH ${PIN:+taskset -c $PIN} python3 bench/launch_cost.py"
  cost() { "$@" 2>&1 | grep -oE "^launch_cost: .*"; }
  { cat /sys/devices/system/clocksource/clocksource0/current_clocksource
    for i in ${ROUNDS:-1 2 3}; do
      echo "round $i"
      echo "  native        $(cost $lc)"
      echo "  record        $(cost stalldx record --trace /tmp/lc.json -- $lc)"
      echo "  every-call    $(cost stalldx record --cuda-every-call --trace /tmp/lc.json -- $lc)"
      echo "  nvtx-only     $(cost stalldx record --no-cuda --trace /tmp/lc.json -- $lc)"
    done
  } > "$OUT/launch-cost.txt" 2>&1
  ;;
smt)  # do two vCPUs share a core? the decode-only loop's 2-thread scaling on pairs of vCPUs
  for cpus in 0,1 0,2 0,4 0,8 0,15 3,11 7,8; do
    echo "cpus $cpus: $(taskset -c $cpus pipeline_bench --data $data --max-workers 2 --steps 10 2>&1 | grep -E '^decode-only')"
  done > "$OUT/smt.txt" 2>&1
  ;;
counts)  # which CUDA calls example 2 makes, by name, with every call recorded (what the default leaves out)
  stalldx record --cuda-every-call --trace /tmp/ov-every.json -- $py --workers 12 --steps 30 > /dev/null 2>&1
  python3 -c "
import json, sys, collections
c = collections.Counter(); d = collections.Counter()
for line in open(sys.argv[1]):
    if '\"cuda_api\"' not in line: continue
    e = json.loads(line.rstrip().rstrip(','))
    c[e['name']] += 1; d[e['name']] += e.get('dur', 0)
for n, k in c.most_common(40): print(f'{k:8d} {d[n]/1000:10.1f} ms  {n}')
" /tmp/ov-every.json > "$OUT/api-counts.txt" 2>&1
  ;;
closing)
  lscpu > "$OUT/lscpu.txt" 2>&1
  {
    stalldx record --warmup 3 --trace /tmp/ex2-db.json -- $py --workers 12 --image-size 448 --steps 30 2>&1 | summary
    stalldx diagnose /tmp/ex2-db.json --no-summaries 2>&1 | grep -E "^ +[0-9]+ " | cut -c1-220
  } > "$OUT/device-bound.txt" 2>&1
  rate() { "$@" 2>&1 | grep -oE "[0-9]+ img/s" | head -1 | grep -oE "[0-9]+"; }
  ex="$py --workers 12 --steps 30"
  for i in 1 2 3 4 5; do echo "round $i native $(rate $ex) record $(rate stalldx record --trace /tmp/ov.json -- $ex)"; done > "$OUT/overhead.txt" 2>&1
  ;;
devicebound)
  for px in 448 384; do
    echo "-- image size $px, the loss read every 10 steps"
    stalldx record --warmup 3 --trace /tmp/ex2-db$px.json -- $py --workers 12 --image-size $px --steps 30 --loss-every 10 2>&1 | summary
  done > "$OUT/device-bound.txt" 2>&1
  python3 -c "
import json, sys, collections
ev = []
for line in open(sys.argv[1]):
    line = line.rstrip().rstrip(',')
    if line.startswith('{\"ph\"'):
        try: ev.append(json.loads(line))
        except Exception: pass
long = collections.Counter(); total = collections.Counter()
for e in ev:
    if e.get('cat') in ('cuda_api', 'sync', 'launch') and e.get('dur', 0) > 5000:
        long[(e.get('cat'), e['name'])] += 1; total[(e.get('cat'), e['name'])] += e['dur'] / 1000
for k, n in long.most_common(20): print(n, round(total[k], 1), 'ms', k)
for e in ev:
    if e.get('cat') in ('cuda_api', 'sync') and e.get('dur', 0) > 20000: print(round(e['ts']/1000, 1), round(e['dur']/1000, 1), e['name'], e.get('args', {}).get('step'), e.get('tid'))
" /tmp/ex2-db448.json > "$OUT/long-calls.txt" 2>&1
  ;;
x2)
  if [[ -e /usr/lib/x86_64-linux-gnu/libmpi.so.40 ]]; then rm -f .gpu/lib/libmpi.so.40 .gpu/lib/libopen-pal.so.40 .gpu/lib/libopen-rte.so.40; fi
  mpi="mpirun --allow-run-as-root -np 2 -x LD_LIBRARY_PATH -x PATH -x XDG_CACHE_HOME"
  one="--device cuda --batch 128 --workers 8 --prefetch 2 --device-ms 30 --warmup 3 --steps 20"
  stalldx run $one --no-profile > "$OUT/x2-one-gpu.txt" 2>&1  # the one-GPU figure, same per-rank workers
  for c in "balanced|" "slow-reads-r1|--rank-override 1:read-latency-ms=20" "one-worker-r1|--rank-override 1:workers=1" \
           "pageable-r1|--rank-override 1:memory=pageable,1:copy=sample"; do
    name=${c%%|*}; args=${c#*|}
    echo "-- $name: $args"
    $mpi stalldx run $one $args --trace /tmp/x2-$name.json > /tmp/x2-$name.log 2>&1; echo "mpirun rc=$?"
    grep -E "result|all-reduce|rank [01] of 2" /tmp/x2-$name.log | cut -c1-300
    stalldx diagnose /tmp/x2-$name.rank*.json 2>&1 | grep -vE "^  step [0-9]+:"
  done > "$OUT/x2.txt" 2>&1
  tar czf "$OUT/x2-traces.tgz" -C /tmp $(cd /tmp && ls x2-*.rank*.json x2-*.log 2>/dev/null)
  ;;
ddp)  # torchrun --nproc-per-node 2, DDP ResNet-50 (gloo: two ranks on one GPU), rank 1 slowed in its reads or not;
      # under `stalldx record` (one trace per rank, the cross-rank report) and as torch.profiler traces (`diagnose DIR`)
  [ -f /tmp/zc-data/manifest.tsv ] || stalldx dataset /tmp/zc-data --classes 101 --per-class 45 > /dev/null 2>&1
  trun="env -u LD_LIBRARY_PATH python3 -m torch.distributed.run --standalone --nproc-per-node 2 examples/torch/train_ddp.py --data /tmp/zc-data"
  for c in "slow-r1|--slow-rank 1 --slow-read-ms ${SLOW_MS:-40}" "balanced|"; do
    name=${c%%|*}; args=${c#*|}
    [[ -n "${CASES:-}" && ",$CASES," != *",$name,"* ]] && continue
    echo "== $name under record: $args"
    timeout ${RUN_TIMEOUT:-240} stalldx record --trace /tmp/ddp-$name.json -- $trun --steps ${STEPS:-30} $args > /tmp/ddp-$name.log 2>&1; echo "rc=$?"
    grep -vE "^ +[0-9]+ +[0-9.]+ |^  step [0-9]+:" /tmp/ddp-$name.log | cut -c1-400 | head -30
    echo "== $name, torch.profiler traces of the same job"
    timeout ${RUN_TIMEOUT:-200} $trun --steps ${KSTEPS:-15} $args --kineto-dir /tmp/kt-$name > /tmp/kt-$name.log 2>&1; echo "rc=$?"; grep -E "img/s|Error" /tmp/kt-$name.log | head -5
    ls -la /tmp/kt-$name; timeout 200 stalldx diagnose /tmp/kt-$name 2>&1 | grep -vE "^  step [0-9]+:" | cut -c1-400 | head -30
    mkdir -p /tmp/ktt-$name; timeout 200 stalldx diagnose /tmp/kt-$name --trimmed /tmp/ktt-$name --keep-steps 8 > /dev/null 2>&1
    echo "== $name, torch.profiler traces trimmed to 8 steady steps"; stalldx diagnose /tmp/ktt-$name 2>&1 | grep -vE "^  step [0-9]+:" | cut -c1-400 | head -12
  done > "$OUT/ddp.txt" 2>&1
  tar czf "$OUT/ddp-traces.tgz" -C /tmp $(cd /tmp && ls ddp-*.rank*.json ddp-*.log kt-*.log 2>/dev/null)
  tar czf "$OUT/ddp-kineto-trimmed.tgz" -C /tmp $(cd /tmp && ls -d ktt-* 2>/dev/null)
  ;;
ranks)
  {
    echo "== NCCL all-reduce at world size 1, profiled"
    NCCL_DEBUG=WARN stalldx run $seed --steps 20 --collective nccl --trace /tmp/nccl1.json > /tmp/nccl1.log 2>&1; echo "rc=$?"
    grep -vE "^ +[0-9]+ +[0-9.]+ " /tmp/nccl1.log | head -40
    echo "== the same, NCCL's own NVTX ranges off"
    NCCL_NVTX_DISABLE=1 stalldx run $seed --steps 20 --collective nccl --trace /tmp/nccl1b.json > /tmp/nccl1b.log 2>&1; echo "rc=$?"; tail -5 /tmp/nccl1b.log
    echo "== the same, no trace file"
    stalldx run $seed --steps 20 --collective nccl > /tmp/nccl1c.log 2>&1; echo "rc=$?"; tail -3 /tmp/nccl1c.log
    echo "== the seed workload without / with it, unprofiled"
    stalldx run $seed --steps 30 --no-profile 2>&1 | grep result; stalldx run $seed --steps 30 --no-profile --collective nccl 2>&1 | grep result
    echo "== device records launched inside the collective ranges"
    grep -E '"cat":"(kernel|memcpy_d2d)"' /tmp/nccl1.json | grep '"bytes":51200000' | head -3 | cut -c1-300
  } > "$OUT/nccl.txt" 2>&1
  # The host's Open MPI (mpirun, its plugins) with its own libmpi: the bundle's Debian copy is dropped.
  if [[ -e /usr/lib/x86_64-linux-gnu/libmpi.so.40 ]]; then rm -f .gpu/lib/libmpi.so.40 .gpu/lib/libopen-pal.so.40 .gpu/lib/libopen-rte.so.40; fi
  { mpirun --version | head -1; ls /usr/lib/x86_64-linux-gnu/libmpi.so* ; } > "$OUT/mpi.txt" 2>&1
  mpi="mpirun --allow-run-as-root --oversubscribe -np 4 -x LD_LIBRARY_PATH -x PATH -x XDG_CACHE_HOME"
  # 51 MB on host buffers takes this host's Open MPI ~75 ms on 4 ranks (shared memory, no single-copy in
  # the container): 8 MB keeps the step near --step-ms, so one worker's decode is the longer part.
  base="--device none --batch 128 --workers 4 --prefetch 2 --step-ms ${STEP_MS:-40} --allreduce-mb 8 --warmup 3 --steps 20"
  for c in "balanced|" "slow-reads-r2|--rank-override 2:read-latency-ms=20" "one-worker-r1|--rank-override 1:workers=1"; do
    name=${c%%|*}; args=${c#*|}
    echo "-- $name: $args"
    $mpi stalldx run $base $args --trace /tmp/r-$name.json > /tmp/r-$name.log 2>&1; echo "mpirun rc=$?"; grep -E "result|rank" /tmp/r-$name.log | head -8
    stalldx diagnose /tmp/r-$name.rank*.json 2>&1 | head -40
  done >> "$OUT/mpi.txt" 2>&1
  for c in "balanced-51mb|" "slow-reads-r2-51mb|--rank-override 2:read-latency-ms=20"; do  # the default all-reduce size
    name=${c%%|*}; args=${c#*|}
    echo "-- $name: $args (--allreduce-mb 51.2)"
    $mpi stalldx run ${base/--allreduce-mb 8/--allreduce-mb 51.2} $args --trace /tmp/r-$name.json > /tmp/r-$name.log 2>&1; echo "mpirun rc=$?"
    stalldx diagnose /tmp/r-$name.rank*.json 2>&1 | grep -vE "^  step [0-9]+:"
  done >> "$OUT/mpi.txt" 2>&1
  tar czf "$OUT/ranks-traces.tgz" -C /tmp $(cd /tmp && ls r-*.rank*.json r-*.log nccl1*.log 2>/dev/null)
  ;;
esac
date -u +%FT%TZ >> "$OUT/machine.txt"
