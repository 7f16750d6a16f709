#!/usr/bin/env bash
# Compressed snapshots, memory_viz's JSON form and slices, against Python in the same run:
#   tests/bench/bench_compressed.sh CLI FILE [--json]
# FILE: a snapshot pickle, e.g. the bench file (build/bench-data/large-*.pickle, or
# `make_large_snapshot.py --entries 1000000 FILE`). It is compressed here with gzip -1, zstd -3 and
# xz -1 (the tools present), and with --json also written as JSON (large: about 24x the pickle).
# For each form: `memlens-cli stats FILE --json`, best of two, wall time and peak RSS
# (/usr/bin/time); Python's pickle.load (through gzip.open for .gz) as the baseline, for the JSON
# Python's json.load of the same JSON; the speed-up and memlens' peak RSS against the form's size. Then `slice` of the middle fifth of device 0.
set -euo pipefail
CLI=$(readlink -f "${1:?usage: bench_compressed.sh CLI FILE [--json]}")
SRC=$(readlink -f "${2:?usage: bench_compressed.sh CLI FILE [--json]}")
PY=${MEMLENS_PYTHON:-/usr/bin/python3}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cp "$SRC" "$WORK/s.pickle"
forms=(s.pickle)
command -v gzip >/dev/null && { gzip -1 -k "$WORK/s.pickle"; forms+=(s.pickle.gz); }
command -v zstd >/dev/null && { zstd -q -3 "$WORK/s.pickle" -o "$WORK/s.pickle.zst"; forms+=(s.pickle.zst); }
command -v xz >/dev/null && { xz -1 -k -T2 "$WORK/s.pickle"; forms+=(s.pickle.xz); }
if [[ ${3:-} == --json ]]; then
  "$PY" -c "import json, pickle, sys; json.dump(pickle.load(open(sys.argv[1], 'rb')), open(sys.argv[2], 'w'))" \
    "$WORK/s.pickle" "$WORK/s.json"
  forms+=(s.json)
fi
best() {  # best of two: "seconds kilobytes" of the command
  local a b
  a=$( { /usr/bin/time -f '%e %M' "$@" >/dev/null; } 2>&1 | tail -1)
  b=$( { /usr/bin/time -f '%e %M' "$@" >/dev/null; } 2>&1 | tail -1)
  awk -v a="$a" -v b="$b" 'BEGIN { split(a, x, " "); split(b, y, " "); print (x[1] <= y[1] ? a : b) }'
}
py_plain=$(best "$PY" -c "import pickle, sys; pickle.load(open(sys.argv[1], 'rb'))" "$WORK/s.pickle")
py_gz=""
[[ -f $WORK/s.pickle.gz ]] && py_gz=$(best "$PY" -c "import gzip, pickle, sys; pickle.load(gzip.open(sys.argv[1], 'rb'))" "$WORK/s.pickle.gz")
py_json=""
[[ -f $WORK/s.json ]] && py_json=$(best "$PY" -c "import json, sys; json.load(open(sys.argv[1], 'rb'))" "$WORK/s.json")
printf '%-14s %10s %9s %10s %14s %16s\n' form "size MB" "time s" "peak MB" "python time s" "speed-up x" 
for f in "${forms[@]}"; do
  size=$(stat -c %s "$WORK/$f")
  read -r t kb < <(best "$CLI" stats "$WORK/$f" --json)
  base=$py_plain
  [[ $f == *.gz ]] && base=$py_gz
  [[ $f == *.zst || $f == *.xz ]] && base=$py_plain
  [[ $f == *.json ]] && base=$py_json
  pt=${base%% *}
  awk -v f="$f" -v s="$size" -v t="$t" -v kb="$kb" -v pt="$pt" \
    'BEGIN { printf "%-14s %10.1f %9.2f %10.0f %14.2f %16.1f   peak/size %.2f\n", f, s/1e6, t, kb*1024/1e6, pt, pt/t, kb*1024/s }'
done
echo "python pickle.load of the plain file: ${py_plain% *} s, peak ${py_plain#* } KB${py_gz:+; through gzip.open: ${py_gz% *} s}"
[[ -n $py_json ]] && echo "python json.load of the JSON: ${py_json% *} s, peak ${py_json#* } KB"
n=$("$CLI" stats "$WORK/s.pickle" --json | "$PY" -c "import json, sys; print(json.load(sys.stdin)['devices'][0]['trace_events'])")
a=$((n * 2 / 5)); b=$((n * 3 / 5 - 1))
read -r t kb < <(best "$CLI" slice "$WORK/s.pickle" --device 0 --from "$a" --to "$b" -o "$WORK/slice.pickle")
lt=$( { /usr/bin/time -f '%e' "$PY" -c "import pickle, sys; pickle.load(open(sys.argv[1], 'rb'))" "$WORK/slice.pickle"; } 2>&1 | tail -1)
echo "slice of entries $a..$b: ${t} s, peak $((kb / 1024)) MB, $(($(stat -c %s "$WORK/slice.pickle") / 1048576)) MiB written; Python loads it in ${lt} s"
