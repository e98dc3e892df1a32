#!/usr/bin/env bash
# Installs the stalldx build in $1 into a temp prefix and builds tests/consumer (find_package(stalldx) +
# one include) against it, then runs it: the public API works from another project.
set -euo pipefail
build=${1:?usage: check-consumer.sh BUILD_DIR}
prefix=$(mktemp -d)
cmake --install "$build" --prefix "$prefix" >/dev/null
cmake -S tests/consumer -B "$prefix/consumer-build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$prefix/consumer-build" >/dev/null
"$prefix/consumer-build/consumer" "$prefix/consumer-trace.json"
echo "consumer project: OK ($prefix)"
