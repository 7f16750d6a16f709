#!/bin/bash
# Alternating runs of `memlens-cli stats FILE` for two or more builds of memlens-cli, so that a
# machine whose speed drifts slows each build alike: N rounds, each build once a round. Prints
# for each build the least and the median wall time and the largest peak RSS. The runs are
# compare_builds.py's (which can also pin the builds to K CPUs and turn huge pages off).
#   tests/bench/alternate.sh FILE N CLI1 CLI2 ...
set -euo pipefail
if [ $# -lt 3 ]; then
    echo "usage: $0 FILE ROUNDS CLI [CLI ...]" >&2
    exit 2
fi
file=$1
rounds=$2
shift 2
args=()
for cli in "$@"; do args+=(--cli "$cli=$cli"); done
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
exec "$PY" "$(dirname "$0")/compare_builds.py" "$file" --rounds "$rounds" "${args[@]}"
