set -uo pipefail
source .gpu/env.sh
export XDG_CACHE_HOME=/tmp/stalldx-cache
stalldx run --device none --steps 1 --warmup 0 --no-profile > /dev/null 2>&1
{ stat -f -c "%T" /tmp; df -T /tmp; } > $OUT/fs.txt 2>&1
grep -E "^(retrieval-bandwidth|retrieval-cold-cache|submission-pin-per-batch|spike-every-4|cpu-oversubscribed)\b" configs/scenarios-h200.tsv > /tmp/m.tsv
stalldx eval /tmp/m.tsv --record --against-native --out /tmp/ev --min-accuracy 0 > $OUT/eval.txt 2>&1
for f in /tmp/ev/*.json; do stalldx diagnose "$f" --warmup 3 > "${f%.json}.report.txt" 2>&1; done
tar czf $OUT/reports.tgz -C /tmp/ev $(cd /tmp/ev && ls *.log *.report.txt agreement.txt)
ls -la $OUT
