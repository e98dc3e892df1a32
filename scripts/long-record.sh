#!/usr/bin/env bash
# A long run under `stalldx record --sample`: the reference pipeline for MINUTES minutes (default: the
# CPU stand-in: 60 ms a step, two in flight, ~33 steps/s), sampling every minute the resident memory of `stalldx record` and of the
# recorded program and the parts folder's size on disk. Writes OUT/{memory.tsv,live.jsonl,record.log,trace.json}.
#   scripts/long-record.sh OUT [MINUTES] [more `stalldx run` options]
# STALLDX: the stalldx executable (default: on PATH); PLAN: the --sample plan (default 5/100).
set -uo pipefail
out=${1:?usage: long-record.sh OUT [MINUTES] [run options]}; minutes=${2:-30}; shift; shift || true
bin=${STALLDX:-stalldx}
mkdir -p "$out"
steps=$(( minutes * 60 * 35 ))  # the stand-in pipeline runs ~33 steps/s (two steps in flight)
"$bin" record --sample "${PLAN:-5/100}" --live 60 --live-json "$out/live.jsonl" --trace "$out/trace.json" --no-summaries -- \
  "$bin" run --device none --device-ms 60 --batch 16 --workers 2 --warmup 3 --steps "$steps" --nvtx-only "$@" > "$out/record.log" 2>&1 &
rec=$!
# Resident memory: anonymous (the heap: what would leak) and file-backed (the range files' pages the program
# wrote through its mappings: page cache, bounded by the parts' cap).
rss() { awk '/^RssAnon:/ {a=$2} /^RssFile:/ {f=$2} END {printf "%s\t%s", a+0, f+0}' "/proc/$1/status" 2>/dev/null || printf "0\t0"; }
printf "minute\trecord_anon_kb\trecord_file_kb\tprogram_anon_kb\tprogram_file_kb\tparts_kb\n" > "$out/memory.tsv"
for (( m = 1; ; ++m )); do
  for (( s = 0; s < 60; ++s )); do kill -0 "$rec" 2>/dev/null || break 2; sleep 1; done
  child=$(pgrep -P "$rec" | head -1)
  parts=$(ls -d "$out"/.stalldx-record-* 2>/dev/null | head -1)
  printf "%d\t%s\t%s\t%s\n" "$m" "$(rss "$rec")" "$(rss "${child:-0}")" "$(du -sk "${parts:-/nonexistent}" 2>/dev/null | cut -f1)" >> "$out/memory.tsv"
done
wait "$rec"; echo "record rc=$?" >> "$out/memory.tsv"
ls -la "$out/trace.json" >> "$out/memory.tsv" 2>&1
