#!/bin/bash
# Instructions executed by `memlens-cli stats FILE` for two or more builds, counted by
# valgrind's cachegrind (every thread's user-level instructions; no cache simulation). Unlike
# wall time, the count does not move with a busy host, so it shows a change of a few percent
# that alternating runs cannot; it says nothing of stalls (a count that falls may still take as
# long). Prints each build's count, per trace entry where FILE has a trace, and its ratio to the
# first build's.
#   tests/bench/count_instructions.sh FILE CLI1 CLI2 ...
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: $0 FILE CLI [CLI ...]" >&2
    exit 2
fi
command -v valgrind >/dev/null || { echo "$0: valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }
file=$1
shift
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
entries=$("$1" stats --json "$file" | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(x.get("trace_events", 0) for x in d.get("devices", [])))' 2>/dev/null || echo 0)
first=
for cli in "$@"; do
    valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file="$out/cg.out" "$cli" stats "$file" > /dev/null 2> "$out/log"
    ir=$(sed -n 's/.*I *refs: *//p' "$out/log" | tr -d ',')
    [ -n "$ir" ] || { echo "$0: no count for $cli:" >&2; cat "$out/log" >&2; exit 1; }
    [ -n "$first" ] || first=$ir
    /usr/bin/python3 - "$cli" "$ir" "$first" "$entries" <<'EOF'
import sys
cli, ir, first, entries = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
per = f", {ir / entries:,.0f} an entry ({entries:,} entries)" if entries else ""
print(f"  {cli}: {ir:,} instructions{per}, {ir / first:.3f} of the first build's")
EOF
done
