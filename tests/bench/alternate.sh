#!/bin/bash
# Alternating runs of `memlens-cli stats FILE` for two or more builds of memlens-cli, so that a
# machine whose speed drifts slows each build alike: N rounds, each build once a round. Prints
# for each build the least and the median wall time and the largest peak RSS (/usr/bin/time).
#   tests/bench/alternate.sh FILE N CLI1 CLI2 ...
set -euo pipefail
if [ $# -lt 3 ]; then
    echo "usage: $0 FILE ROUNDS CLI [CLI ...]" >&2
    exit 2
fi
file=$1
rounds=$2
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for i in $(seq "$rounds"); do
    n=0
    for cli in "$@"; do
        /usr/bin/time -f "%e %M" -a -o "$work/$n" "$cli" stats "$file" > /dev/null
        n=$((n + 1))
    done
done
n=0
for cli in "$@"; do
    /usr/bin/python3 - "$work/$n" "$cli" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1]) if line.strip()]
times = sorted(float(r[0]) for r in rows)
peak = max(int(r[1]) for r in rows)  # KiB
print(f"{sys.argv[2]}: {len(times)} runs, least {times[0]:.2f} s, median {statistics.median(times):.2f} s, "
      f"peak {peak / 1024:.1f} MiB")
PY
    n=$((n + 1))
done
