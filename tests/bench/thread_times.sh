#!/bin/bash
# CPU time of each thread of `memlens-cli stats FILE`, from perf's task-clock samples, each
# thread named by the function where it spent most of its samples: which thread bounds the wall
# time, and how busy the second core is (the read-ahead thread's copies, the prefaulting
# thread's zeroed pages, the trace rows' thread). Runs it RUNS times (default 1).
#   tests/bench/thread_times.sh CLI FILE [RUNS]
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: $0 CLI FILE [RUNS]" >&2
    exit 2
fi
command -v perf >/dev/null || { echo "$0: perf is not installed (apt-get install linux-perf)" >&2; exit 2; }
cli=$1
file=$2
runs=${3:-1}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for ((r = 1; r <= runs; ++r)); do
    start=$(date +%s.%N)
    perf record -q -e task-clock -o "$out/perf.data" "$cli" stats "$file" > /dev/null 2> "$out/log" ||
        { cat "$out/log" >&2; exit 1; }
    wall=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.3f", e - s }')
    echo "run $r: wall $wall s (perf's own work included)"
    perf script -i "$out/perf.data" -F tid,period 2> /dev/null | awk '{t[$1] += $2} END {for (k in t) print k, t[k]}' |
        sort -k2,2nr | while read -r tid ns; do
            top=$(perf report -i "$out/perf.data" --stdio --tid "$tid" --sort sym 2> /dev/null |
                  grep -v '^#' | grep -v '^$' | head -1 | sed 's/^ *[0-9.]*% *//')
            awk -v t="$tid" -v ns="$ns" -v top="$top" 'BEGIN { printf "  thread %s: %7.1f ms  %s\n", t, ns / 1e6, top }'
        done
done
