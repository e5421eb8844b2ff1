#!/usr/bin/env bash
# Builds tests/package against an installed mseloss and runs it.
set -euo pipefail
prefix=$1
here=$(cd "$(dirname "$0")" && pwd)
build=$(mktemp -d)
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$build" >/dev/null
"$build/consumer"
echo "package check: find_package(mseloss) and mseloss::mseloss work"
