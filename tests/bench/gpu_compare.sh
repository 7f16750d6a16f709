#!/usr/bin/env bash
# Compares builds of memlens-cli on the GPU host (16 cores), where a real trace read slower than
# here: host facts (CPUs, transparent huge pages), then tests/bench/compare_builds.py on one file
# with all CPUs, two CPUs and THP disabled, and pickle.load of the same file once.
#   tests/bench/gpu_compare.sh OUT_DIR FILE.xz|FILE|record:N ROUNDS NAME=CLI...
# record:N records a real trace of N entries first (tests/bench/gpu_real_trace.py's training,
# on CUDA) into /tmp/real.pickle.
# (the shared libraries the builds need: LD_LIBRARY_PATH, e.g. the prebuilt folder's lib/)
set -euo pipefail
out=$1 src=$2 rounds=$3
shift 3
mkdir -p "$out"
PY=${PYTHON:-python3}
{
  echo "host: $(nproc) CPUs, $(uname -r)"
  for f in enabled defrag khugepaged/defrag; do
    echo "thp $f: $(cat /sys/kernel/mm/transparent_hugepage/$f 2>/dev/null || echo '?')"
  done
  grep -E 'MemTotal|MemAvailable|^Cached' /proc/meminfo || true
  file=$src
  if [[ $src == record:* ]]; then
    file=/tmp/real.pickle
    "$PY" -c 'import sys; sys.path.insert(0, sys.argv[1]); import gpu_real_trace as g; print("recorded", sys.argv[2], g.record(sys.argv[2], int(sys.argv[3]), 0, 150))' \
      "$(dirname "$0")" "$file" "${src#record:}"
  elif [[ $src == *.xz ]]; then
    file=/tmp/$(basename "${src%.xz}")
    "$PY" -c 'import lzma, shutil, sys, time; t = time.perf_counter(); shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"), 1 << 24); print("decompressed", sys.argv[2], "in %.1f s" % (time.perf_counter() - t))' "$src" "$file"
  fi
  # pickle.load in a fresh interpreter, as gpu_real_trace.py times it
  "$PY" -c 'import subprocess, sys; sys.path.insert(0, sys.argv[1]); import gpu_real_trace as g; s, rss = subprocess.run([sys.executable, "-c", g.PICKLE_LOAD, sys.argv[2]], capture_output=True, text=True, check=True).stdout.split(); print("pickle.load: %.2f s, peak %.2f GiB" % (float(s), float(rss) / 2**30))' \
    "$(dirname "$0")" "$file"
  args=()
  for c in "$@"; do args+=(--cli "$c"); done
  "$PY" "$(dirname "$0")/compare_builds.py" "$file" --rounds "$rounds" --cores 2 --no-thp "${args[@]}"
} 2>&1 | tee "$out/compare.log"
