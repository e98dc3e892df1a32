#!/usr/bin/env bash
# scripts/fuzz.sh jpeg|trace|kineto|config|kineto_gzip|roles|parts [SECONDS=600] — builds the fuzz preset and runs one libFuzzer target on a
# copy of its seed corpus (tests/fuzz/corpus/<target>) for SECONDS; findings land in build/fuzz/findings.
set -euo pipefail
target=${1:?usage: fuzz.sh jpeg|trace|kineto|config|kineto_gzip|roles|parts [seconds]}; seconds=${2:-600}
cmake --preset fuzz >/dev/null && cmake --build --preset fuzz --target "${target}_fuzz" >/dev/null
work=build/fuzz/corpus-$target; mkdir -p "$work" build/fuzz/findings
cp -n tests/fuzz/corpus/$target/* "$work/" 2>/dev/null || true
extra=""; [ -f tests/fuzz/$target.dict ] && extra="-dict=tests/fuzz/$target.dict"
exec build/fuzz/tests/fuzz/${target}_fuzz "$work" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix=build/fuzz/findings/ -print_final_stats=1 $extra
