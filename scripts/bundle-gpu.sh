#!/usr/bin/env bash
# bundle-gpu.sh [BUILD_DIR] [DEST] — the GPU host's bundle for scripts/gpu-h200.sh, from a `gpu` preset
# build (default build/gpu → .gpu): the programs the device checks run, stripped (the device tool carries
# at most 64 MiB), and the Debian libraries they need (../shared/tools/bundle.sh). NCCL is not carried
# (≈ 200 MB): env.sh finds the libnccl.so.2 that PyTorch's wheels install on that host.
# The Python hook goes along (share/stalldx/python). Then: run with carry [".gpu"] and a command that starts `source .gpu/env.sh;`.
set -euo pipefail
build=${1:-build/gpu}; dest=${2:-.gpu}
here=$(cd "$(dirname "$0")/.." && pwd)
stage=$(mktemp -d); trap 'rm -rf "$stage"' EXIT
programs="stalldx libstalldx_inject.so gpu_test record_gpu_test cuda_windows pipeline_bench train_loop mpi_loop"
for p in $programs; do
  f=$(find "$build" -name "$p" -type f -not -path '*/CMakeFiles/*' | head -1)
  if [[ -n $f ]]; then cp "$f" "$stage/"; strip --strip-unneeded "$stage/$p"; else echo "bundle-gpu: $p not built in $build (skipped)"; fi
done
# One program at a time: bundle.sh's library loop ends with the status of its last test, so a program whose
# last library an earlier program brought ends that script early (set -e), leaving no env.sh.
rm -rf "$dest"; mkdir -p "$dest/bin" "$dest/lib"
for f in "$stage"/*; do
  one=$(mktemp -d); mkdir -p "$one/in"; cp "$f" "$one/in/"
  "$here/../shared/tools/bundle.sh" "$one/in" "$one/out" > /dev/null
  cp -n "$one/out/bin/"* "$dest/bin/"; cp -n "$one/out/lib/"* "$dest/lib/" 2>/dev/null || true; cp "$one/out/env.sh" "$dest/env.sh"
  rm -rf "$one"
done
rm -f "$dest/lib/libnccl.so.2"
# The Python hook beside the programs (bin/../share/stalldx/python, where `record` looks): without it a
# PyTorch program under `record` on that host has no steps from its DataLoader or backward passes.
mkdir -p "$dest/share/stalldx/python"
cp "$here"/profiler/python/*.py "$dest/share/stalldx/python/"
cat >> "$dest/env.sh" <<'ENV'
# NCCL from PyTorch's wheel (nvidia-nccl-cu*) on the GPU host, found by Debian-free python3 without our libraries.
nccl_dir=$(env -u LD_LIBRARY_PATH python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null || true)
if [[ -n $nccl_dir && -d $nccl_dir ]]; then export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$nccl_dir"; fi  # sourcing ends with status 0
ENV
du -sh "$dest"
