#!/usr/bin/env bash
# Builds the benchmarks (if needed) and runs tests/bench/bench.py: memlens vs Python's pickle.load
# on a generated 1,000,000-entry snapshot (cached in BUILD_DIR/bench-data/), and StateHistory.
#
#   tests/bench/run.sh [BUILD_DIR] [bench.py options: --entries N --repeat N --enforce-goals ...]
#
# BUILD_DIR defaults to build-bench, configured here as a Release build without the GUI if absent.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD_DIR=build-bench
if [[ $# -gt 0 && $1 != -* ]]; then
    BUILD_DIR=$1
    shift
fi
PYTHON=/usr/bin/python3
[[ -x $PYTHON ]] || PYTHON=python3

if [[ ! -f $BUILD_DIR/CMakeCache.txt ]]; then
    cmake -S "$REPO" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMEMLENS_BUILD_GUI=OFF
fi
cmake --build "$BUILD_DIR" --target memlens-bench-load memlens-bench-rewind memlens-bench-replay memlens-bench-sites
"$BUILD_DIR/tests/bench/memlens-bench-sites"
exec "$PYTHON" "$REPO/tests/bench/bench.py" --build-dir "$BUILD_DIR" --python "$PYTHON" "$@"
