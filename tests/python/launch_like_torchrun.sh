#!/bin/sh
# Starts N copies of a Python script with the environment torchrun gives its workers (RANK, LOCAL_RANK,
# WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RUN_ID) and waits for them all.
# Debian's torchrun (torch 1.13 on Python 3.11) fails before starting any worker (Std.from_str returns
# None under 3.11's enum), so the tests launch this way; on a host whose torchrun works, use torchrun.
#   launch_like_torchrun.sh N PORT script.py [args...]
n=$1; port=$2; shift 2
pids=""
i=0
while [ "$i" -lt "$n" ]; do
  RANK=$i LOCAL_RANK=$i WORLD_SIZE=$n LOCAL_WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$port TORCHELASTIC_RUN_ID=launch-$port \
    /usr/bin/python3 "$@" &
  pids="$pids $!"
  i=$((i + 1))
done
rc=0
for p in $pids; do wait "$p" || rc=$?; done
exit $rc
