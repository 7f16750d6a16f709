#!/usr/bin/env bash
# GPU check of memlens capture: run on a machine with an NVIDIA GPU and a CUDA build of torch
# (written for torch 2.11, CUDA 13, one H200). Builds memlens-cli and the C++ capture library
# against the installed torch, records small jobs, and writes to RESULTS_DIR (8 files at most,
# each under 16 MB):
#
#   run.log        everything this script printed
#   summary.json   the checks, each {name, ok, detail}, and the sessions' summaries
#   train.memlens  a transformer trained with a DataLoader (60 train + 10 eval iterations),
#                  snapshots at iterations 5 and 31 and at exit
#   oom.memlens    a job that allocates in a loop until the allocator's cap (2 GiB) refuses
#   oom.pickle     its out-of-memory snapshot, exported (opens in pytorch.org/memory_viz, memlens)
#   leak.memlens   the classic losses.append(loss) leak, a snapshot every 10 iterations
#   leak.pickle    its last iteration snapshot, exported
#   cxx.memlens    the C++ capture library's example (LibTorch), with a leak and an OOM
#
# Also recorded, in the scratch directory only: the leak job with --stack-depth 2 (no exported
# stack longer than 2 frames; checks named "depth: ..."), and the doctor's mistake examples on
# CUDA through tests/capture/test_mistakes.py --device cuda (checks named "mistakes: ...").
# And newer_fields.py (checks named "newer: ..."): a job recorded with torch's own API using what
# this torch has of the newer snapshot fields (a MemPool, a CUDA graph's pool, user metadata, a
# compiled function's FX frames, pinned host memory, the ring-buffer flags), read by memlens-cli
# stats / check and compared with tests/tools/snapshot_oracle.py; its report goes into
# summary.json ("newer"), its snapshot to RESULTS as newer.pickle only while RESULTS stays within
# 8 files (else it stays in the scratch directory, newer/).
#
#   capture/tests/gpu/run.sh RESULTS_DIR
#
# And tests/bench/gpu_real_trace.py (checks named "scale: ..."): a real CUDA trace of --entries
# entries (SCALE_ENTRIES, default 2,000,000; at most 120 s of training) recorded with torch's own API and read by memlens-cli
# stats / check / replay / whatif / slice, compressed and not, against pickle.load and the oracle;
# its report goes into summary.json ("scale").
#
# The jobs of 5 run side by side (each with its own log, printed in order when all have ended).
#
# Environment: PYTHON (default python3: the interpreter with torch), MEMLENS_GPU_WORK (build and
# scratch directory; default a new one under /tmp), CAP_MB (the OOM job's cap, default 2048),
# MEMLENS_GPU_PREBUILT (a folder with bin/memlens-cli, lib/libmemlens_model.a,
# lib/libmemlens_recorder.a and the shared libraries they need, include/ with nlohmann/json.hpp and
# sqlite3.h, as capture/tests/gpu/prebuild.sh makes it on Debian 12: used when its memlens-cli runs
# here, so that neither CMake nor the development packages are needed; the C++ example is then
# compiled directly against torch), SCALE_ENTRIES.
# For trying the script itself on a machine without a GPU: MEMLENS_GPU_DRY=1 goes on without CUDA
# (the jobs then fail), MEMLENS_GPU_FORCE_FALLBACK=1 takes the fallbacks for SQLite and nlohmann.
# With MEMLENS_GPU_PREBUILT on one H200 (16 cores): 97 s, or 163 s with SCALE_ENTRIES=6600000 (a
# 597 MB trace); building memlens-cli there instead adds the compile. Exit 0 when every check passed.
set -uo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 RESULTS_DIR" >&2
  exit 2
fi
mkdir -p "$1" || exit 2
RESULTS=$(cd "$1" && pwd)
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
HERE=$SRC/capture/tests/gpu
WORK=${MEMLENS_GPU_WORK:-$(mktemp -d /tmp/memlens-gpu-XXXXXX)}
mkdir -p "$WORK"
PY=${PYTHON:-python3}
NPROC=$(nproc 2>/dev/null || echo 4)
LOG=$RESULTS/run.log
: >"$LOG"
exec > >(tee -a "$LOG") 2>&1
T0=$SECONDS
CHECKS=$WORK/checks.jsonl
: >"$CHECKS"

say() { echo "=== [$((SECONDS - T0)) s] $*"; }
# note NAME OK DETAIL: one check for summary.json
note() {
  "$PY" -c 'import json,sys; print(json.dumps({"name": sys.argv[1], "ok": sys.argv[2] == "1", "detail": sys.argv[3]}))' \
    "$1" "$2" "$3" >>"$CHECKS"
  if [[ $2 == 1 ]]; then echo "  ok: $1: $3"; else echo "  FAILED: $1: $3"; fi
}

# ---- 1. the machine ----------------------------------------------------------------------------
say "machine"
uname -a
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
if ! "$PY" - <<'EOF'
import sys, torch
print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda,
      "cxx11 abi", torch._C._GLIBCXX_USE_CXX11_ABI)
assert torch.cuda.is_available(), "torch.cuda.is_available() is False"
print("device 0:", torch.cuda.get_device_name(0))
EOF
then
  note "torch with CUDA" 0 "$PY has no CUDA torch; set PYTHON"
  [[ ${MEMLENS_GPU_DRY:-0} == 1 ]] || exit 1
fi
TORCH_PREFIX=$("$PY" -c 'import torch; print(torch.utils.cmake_prefix_path)')
TORCH_ABI=$("$PY" -c 'import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))')
TORCH_LIB=$("$PY" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
CXX=${CXX:-g++}
$CXX --version | head -1

# ---- 2. tools and libraries ----------------------------------------------------------------------
say "tools"
PRE=${MEMLENS_GPU_PREBUILT:-}
PRE_OK=0
if [[ -n $PRE ]]; then
  PRE=$(cd "$PRE" && pwd)
  if "$PRE/bin/memlens-cli" --version >/dev/null 2>&1; then
    PRE_OK=1
    export CPLUS_INCLUDE_PATH=$PRE/include${CPLUS_INCLUDE_PATH:+:$CPLUS_INCLUDE_PATH}
    echo "prebuilt: $PRE ($("$PRE/bin/memlens-cli" --version 2>&1 | head -1))"
  else
    echo "the prebuilt memlens-cli in $PRE does not run here:"
    "$PRE/bin/memlens-cli" --version 2>&1 | head -3
  fi
fi
CMAKE=cmake
cmake_ok() { "$1" --version 2>/dev/null | awk 'NR==1 { split($3, v, "."); exit !(v[1] > 3 || (v[1] == 3 && v[2] >= 25)) }'; }
if [[ $PRE_OK == 0 ]] && ! cmake_ok "$CMAKE"; then
  echo "cmake 3.25 or newer is needed (the top-level CMakeLists.txt asks for it); trying pip's"
  timeout 60 "$PY" -m pip install --quiet --user 'cmake>=3.25' 2>&1 | tail -2
  CMAKE=$("$PY" -c 'import cmake, os; print(os.path.join(cmake.CMAKE_BIN_DIR, "cmake"))' 2>/dev/null || echo cmake)
fi
if [[ $PRE_OK == 0 ]] && ! cmake_ok "$CMAKE"; then
  note "cmake >= 3.25" 0 "found: $($CMAKE --version 2>/dev/null | head -1)"
  exit 1
fi
[[ $PRE_OK == 0 ]] && $CMAKE --version | head -1
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)

have_header() {
  [[ ${MEMLENS_GPU_FORCE_FALLBACK:-0} == 1 ]] && return 1
  echo "#include <$1>" | $CXX -std=c++20 -E -x c++ - >/dev/null 2>&1
}
APT_OK=0
[[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null && APT_OK=1
EXTRA=()        # CMake arguments for fallbacks
FALLBACK_INC=() # the same for the direct compile
if ! have_header sqlite3.h || ! have_header nlohmann/json.hpp || { [[ $PRE_OK == 0 ]] && ! have_header rapidjson/reader.h; }; then
  if [[ $APT_OK == 1 && ${MEMLENS_GPU_FORCE_FALLBACK:-0} != 1 ]]; then
    echo "installing libsqlite3-dev nlohmann-json3-dev rapidjson-dev"
    DEBIAN_FRONTEND=noninteractive timeout 120 apt-get install -y -q libsqlite3-dev nlohmann-json3-dev rapidjson-dev >/dev/null 2>&1 ||
      echo "apt-get install did not work (no network?)"
  fi
fi
# RapidJSON (header-only, the model's JSON snapshot reader) is needed only to build memlens-cli here
if [[ $PRE_OK == 0 ]] && ! have_header rapidjson/reader.h; then
  hpp=$(find /usr /opt "$HOME" "$("$PY" -c 'import site; print(site.getsitepackages()[0])')" \
    -path '*/rapidjson/reader.h' -print -quit 2>/dev/null)
  if [[ -n $hpp ]]; then
    EXTRA+=(-DRAPIDJSON_INCLUDE_DIR="$(dirname "$(dirname "$hpp")")")
    echo "rapidjson/reader.h not on the include path: using $hpp"
  else
    note "RapidJSON" 0 "rapidjson/reader.h not found (Debian/Ubuntu: rapidjson-dev); or give MEMLENS_GPU_PREBUILT"
    exit 1
  fi
fi
if ! have_header sqlite3.h; then
  # SQLite's library is on every machine with Python; its header may not be.
  lib=$(ldconfig -p 2>/dev/null | awk '/libsqlite3\.so\.0 .*x86-64|libsqlite3\.so\.0 .*aarch64/ { print $NF; exit }')
  [[ -z $lib ]] && lib=$(ldd "$("$PY" -c 'import _sqlite3; print(_sqlite3.__file__)')" 2>/dev/null | awk '/libsqlite3/ { print $3; exit }')
  if [[ -n $lib ]]; then
    mkdir -p "$WORK/sqlite/include" "$WORK/sqlite/lib"
    cp "$HERE/fallback/sqlite3.h" "$WORK/sqlite/include/"
    ln -sf "$lib" "$WORK/sqlite/lib/libsqlite3.so"
    EXTRA+=(-DSQLite3_INCLUDE_DIR="$WORK/sqlite/include" -DSQLite3_LIBRARY="$WORK/sqlite/lib/libsqlite3.so")
    FALLBACK_INC+=(-I"$WORK/sqlite/include")
    echo "sqlite3.h missing: using capture/tests/gpu/fallback/sqlite3.h with $lib"
  else
    note "SQLite" 0 "neither sqlite3.h nor libsqlite3.so.0 found"
    exit 1
  fi
fi
if ! have_header nlohmann/json.hpp; then
  hpp=$(find /usr /opt "$HOME" "$("$PY" -c 'import site; print(site.getsitepackages()[0])')" \
    -path '*/nlohmann/json.hpp' -print -quit 2>/dev/null)
  if [[ -n $hpp ]]; then
    inc=$(dirname "$(dirname "$hpp")")
    EXTRA+=(-Dnlohmann_json_DIR="$HERE/fallback" -DNLOHMANN_JSON_INCLUDE_DIR="$inc")
    FALLBACK_INC+=(-I"$inc")
    echo "nlohmann/json.hpp not on the include path: using $hpp"
  else
    note "nlohmann json" 0 "nlohmann/json.hpp not found (Debian/Ubuntu: nlohmann-json3-dev)"
    exit 1
  fi
elif ! $CMAKE --find-package -DNAME=nlohmann_json -DCOMPILER_ID=GNU -DLANGUAGE=CXX -DMODE=EXIST >/dev/null 2>&1; then
  inc=$(echo '#include <nlohmann/json.hpp>' | $CXX -std=c++20 -M -x c++ - 2>/dev/null | tr ' ' '\n' |
    grep -m1 'nlohmann/json.hpp' | sed 's|/nlohmann/json.hpp||')
  [[ -n $inc ]] && EXTRA+=(-Dnlohmann_json_DIR="$HERE/fallback" -DNLOHMANN_JSON_INCLUDE_DIR="$inc")
fi

# ---- 3. memlens-cli: the minimal configure ---------------------------------------------------------
say "memlens-cli (-DMEMLENS_BUILD_GUI=OFF -DMEMLENS_BUILD_TESTS=OFF)"
ABI_FLAGS=(-DCMAKE_CXX_FLAGS="-D_GLIBCXX_USE_CXX11_ABI=$TORCH_ABI")
if [[ $PRE_OK == 1 ]]; then
  CLI=$PRE/bin/memlens-cli
  # its compiled-in agent folder is the build machine's: the agent of this tree instead
  export MEMLENS_AGENT_DIR=$SRC/capture/python
  note "minimal build" 1 "the prebuilt memlens-cli (built without Qt on Debian 12) runs here"
elif $CMAKE -S "$SRC" -B "$WORK/build" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release -DMEMLENS_BUILD_GUI=OFF \
  -DMEMLENS_BUILD_TESTS=OFF -DMEMLENS_CAPTURE_TORCH=OFF "${ABI_FLAGS[@]}" "${EXTRA[@]}" >"$WORK/configure.log" 2>&1 &&
  $CMAKE --build "$WORK/build" -j "$NPROC" --target memlens-cli >"$WORK/build.log" 2>&1; then
  note "minimal build" 1 "memlens-cli built without Qt (-DMEMLENS_BUILD_GUI=OFF -DMEMLENS_BUILD_TESTS=OFF)"
  CLI=$WORK/build/app/memlens-cli
else
  tail -30 "$WORK/configure.log" "$WORK/build.log"
  note "minimal build" 0 "configure or build of memlens-cli failed (see run.log)"
  exit 1
fi

# ---- 4. the C++ capture library, against this torch --------------------------------------------------
say "C++ capture library against $TORCH_PREFIX"
EXAMPLE=
if [[ $PRE_OK == 0 ]] && $CMAKE -S "$SRC" -B "$WORK/build-torch" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release -DMEMLENS_BUILD_GUI=OFF \
  -DMEMLENS_BUILD_TESTS=OFF -DCMAKE_PREFIX_PATH="$TORCH_PREFIX" "${ABI_FLAGS[@]}" "${EXTRA[@]}" \
  >"$WORK/configure-torch.log" 2>&1 && grep -q "C++ capture library with CUDA" "$WORK/configure-torch.log" &&
  $CMAKE --build "$WORK/build-torch" -j "$NPROC" --target memlens-capture-example >"$WORK/build-torch.log" 2>&1; then
  EXAMPLE=$WORK/build-torch/capture/memlens-capture-example
  note "C++ library (CMake)" 1 "find_package(Torch) with CUDA; built memlens-capture-example"
else
  if [[ $PRE_OK == 0 ]]; then
    grep -E "memlens:|Error|error" "$WORK/configure-torch.log" "$WORK/build-torch.log" 2>/dev/null | head -15
    echo "CMake with Torch did not work (a pip torch needs the CUDA toolkit for find_package(Torch));"
  fi
  echo "compiling the library and the example directly against the wheel"
  # the CUDA runtime's headers (cuda_runtime.h needs crt/host_config.h, from the toolkit's nvcc)
  site=$("$PY" -c 'import site; print(site.getsitepackages()[0])')
  nvcc_root=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")")
  cuda_inc=()
  for h in cuda_runtime_api.h crt/host_config.h; do
    f=$(find "$nvcc_root/include" "$nvcc_root/targets" /usr/local/cuda/include /usr/local/cuda/targets "$site/nvidia" \
      /usr/include -path "*/$h" -print -quit 2>/dev/null)
    [[ -n $f ]] && cuda_inc+=(-I"${f%/"$h"}")
  done
  echo "CUDA headers: ${cuda_inc[*]:-none} (nvcc: $(command -v nvcc || echo none))"
  torch_inc=$("$PY" -c 'from torch.utils import cpp_extension as c; print(" ".join("-I" + p for p in c.include_paths()))')
  inc=(-I"$SRC/capture/include" -I"$SRC/model/include" $torch_inc "${FALLBACK_INC[@]}")
  inc+=("${cuda_inc[@]}")
  if [[ $PRE_OK == 1 ]]; then
    # the machine's own shared libraries where it has them (one copy of each in the process, torch's
    # too), else the prebuilt folder's
    libs=("$PRE/lib/libmemlens_recorder.a" "$PRE/lib/libmemlens_model.a")
    rpath=()
    for so in libsqlite3.so.0 libz.so.1 liblzma.so.5 libzstd.so.1; do
      if ldconfig -p 2>/dev/null | grep -q "^[[:space:]]*$so "; then
        libs+=(-l:"$so")
      else
        libs+=("$PRE/lib/$so")
        rpath=(-Wl,-rpath,"$PRE/lib")
      fi
    done
  else
    libs=("$WORK/build/capture/libmemlens_recorder.a" "$WORK/build/model/libmemlens_model.a"
      "$(grep -m1 '^SQLite3_LIBRARY' "$WORK/build/CMakeCache.txt" | cut -d= -f2)" -lz -llzma -lzstd)
    rpath=()
  fi
  # the library's three files and the example, compiled side by side, then linked
  objs=()
  pids=()
  for f in capture/src/Session.cpp capture/src/Watch.cpp capture/src/WatchModel.cpp capture/examples/train_loop.cpp; do
    o=$WORK/direct-$(basename "$f" .cpp).o
    objs+=("$o")
    $CXX -std=c++20 -O1 -c -D_GLIBCXX_USE_CXX11_ABI="$TORCH_ABI" -DMEMLENS_CAPTURE_CUDA=1 "${inc[@]}" "$SRC/$f" \
      -o "$o" >"$o.log" 2>&1 &
    pids+=($!)
  done
  direct_ok=1
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || { direct_ok=0; tail -20 "${objs[$i]}.log"; }
  done
  if [[ $direct_ok == 1 ]] && $CXX "${objs[@]}" -o "$WORK/memlens-capture-example" "${libs[@]}" \
    -L"$TORCH_LIB" -Wl,--no-as-needed -ltorch -ltorch_cpu -ltorch_cuda -lc10 -lc10_cuda -Wl,--as-needed \
    -Wl,-rpath,"$TORCH_LIB" "${rpath[@]}" -lpthread -ldl >"$WORK/build-direct.log" 2>&1; then
    EXAMPLE=$WORK/memlens-capture-example
    note "C++ library (direct)" 1 "compiled against the wheel$([[ ${#cuda_inc[@]} -lt 2 ]] && echo ', without the whole CUDA runtime headers: no C++ OOM observer')"
  else
    tail -30 "$WORK/build-direct.log"
    note "C++ library" 0 "could not be built (see run.log)"
  fi
fi

# ---- 5. record, every job side by side ----------------------------------------------------------------
cd "$WORK" || exit 1
mkdir -p "$WORK/logs"
JOBS=()
PIDS=()
job() { # job NAME COMMAND...: in the background, its output in logs/NAME.log
  local name=$1
  shift
  JOBS+=("$name")
  ("$@") >"$WORK/logs/$name.log" 2>&1 &
  PIDS+=($!)
}
rec() { # rec NAME EXPECTED_EXIT OPTIONS... -- COMMAND...: records into RESULTS (REC_DIR where set)
  local name=$1 want=$2 dir=${REC_DIR:-$RESULTS}
  shift 2
  rm -f "$dir/$name.memlens"
  local t=$SECONDS
  timeout 300 "$CLI" record -o "$dir/$name.memlens" "$@"
  local rc=$?
  note "$name: exit status" $([[ $rc == "$want" ]] && echo 1 || echo 0) "exit $rc (expected $want), $((SECONDS - t)) s"
}
checked() { # checked LABEL TIMEOUT COMMAND...: a check script, exit 0 when it passed; its last line is the detail
  local label=$1 limit=$2
  shift 2
  local t=$SECONDS out rc
  out=$(timeout "$limit" "$@" 2>&1)
  rc=$?
  echo "$out" | tail -n 40
  note "$label" $([[ $rc == 0 ]] && echo 1 || echo 0) "exit $rc, $((SECONDS - t)) s: $(echo "$out" | tail -n 1)"
}

job train rec train 0 --snapshot-iterations 5,31 --max-entries 5000 -- "$PY" "$HERE/jobs/train.py"
oom() { CAP_MB=${CAP_MB:-2048} rec oom 1 --max-entries 5000 -- "$PY" "$HERE/jobs/oom.py"; }
job oom oom
job leak rec leak 0 --snapshot-every 10 --max-entries 5000 -- "$PY" "$HERE/jobs/leak.py"
if [[ -n $EXAMPLE ]]; then
  # C++ stacks (the default for a C++ program) are slow to symbolise: a shorter history.
  job cxx rec cxx 0 --snapshot-iterations 3,10 --max-entries 2000 -- "$EXAMPLE" --steps 12 --eval 5 --leak --oom --markers
fi

# --stack-depth 2: kept in the scratch directory (RESULTS holds 8 files at most); checked with the others in 6.
depth() { REC_DIR=$WORK rec depth 0 --stack-depth 2 --snapshot-every 10 --max-entries 2000 -- "$PY" "$HERE/jobs/leak.py"; }
job depth depth

# The doctor's evidence on CUDA: each example of capture/examples/mistakes and its --fixed twin,
# recorded and checked by tests/capture/test_mistakes.py (sessions in its own temporary directory);
# grads_kept also checks the snapshots' `categories`, fragmentation really runs out of memory.
for c in graph_kept eval_with_grad kept_on_device previous_batch grads_kept variable_length growth fragmentation; do
  job "mistakes-$c" checked "mistakes: $c (cuda)" 300 \
    "$PY" "$SRC/tests/capture/test_mistakes.py" --cli "$CLI" --python "$PY" --device cuda --case "$c"
done

# memlens-cli attach on a CUDA job started without memlens: the history covers the time after the
# attach, snapshots at an iteration and at the detach, the history off again after it. The attach
# needs gdb (Python before 3.14); where only CUDA's cuda-gdb is installed, that one.
attach() {
  if ! command -v gdb >/dev/null && command -v cuda-gdb >/dev/null; then
    mkdir -p "$WORK/gdb-bin"
    # a script, not a link: cuda-gdb chooses the binary it runs by the name it was called by
    printf '#!/bin/sh\nexec %q "$@"\n' "$(command -v cuda-gdb)" >"$WORK/gdb-bin/gdb"
    chmod +x "$WORK/gdb-bin/gdb"
    export PATH=$WORK/gdb-bin:$PATH
    echo "no gdb here: memlens-cli attach finds cuda-gdb as gdb ($(cuda-gdb --version | head -1))"
  fi
  checked "attach: cuda" 300 "$PY" "$SRC/tests/capture/test_attach.py" --cli "$CLI" --python "$PY" --case cuda
}
job attach attach

# The newer snapshot fields, recorded with torch's own API (each of its checks is in its report,
# merged into summary.json in 7).
rm -rf "$WORK/newer" "$WORK/scale"
job newer checked "newer: exit status" 300 "$PY" "$HERE/newer_fields.py" --cli "$CLI" --out "$WORK/newer"

# Issue 13's scale on a real CUDA trace (its checks and figures merged into summary.json in 7).
job scale checked "scale: exit status" 420 "$PY" "$SRC/tests/bench/gpu_real_trace.py" --cli "$CLI" \
  --out "$WORK/scale" --entries "${SCALE_ENTRIES:-2000000}" --max-seconds 120

say "${#JOBS[@]} jobs side by side: ${JOBS[*]}"
wait "${PIDS[@]}" # (a plain wait would also wait for the tee of run.log, which ends with this script)
for name in "${JOBS[@]}"; do
  say "$name"
  cat "$WORK/logs/$name.log"
done

# ---- 6. check and export -------------------------------------------------------------------------------
say "checks"
"$PY" - "$CLI" "$RESULTS" "$CHECKS" "$WORK" <<'EOF'
import json, os, pickle, subprocess, sys

cli, results, checks, work = sys.argv[1:5]
out = open(checks, "a")


def note(name, ok, detail):
    out.write(json.dumps({"name": name, "ok": bool(ok), "detail": detail}) + "\n")
    print("  %s: %s: %s" % ("ok" if ok else "FAILED", name, detail))


def session(name):
    path = os.path.join(results, name + ".memlens")
    if not os.path.exists(path):
        note(name + ": session", False, "no file")
        return None
    p = subprocess.run([cli, "session", path, "--json", "--check"], capture_output=True, text=True)
    if p.returncode != 0:
        note(name + ": session", False, p.stderr.strip())
        return None
    s = json.loads(p.stdout)
    note(name + ": session", True, "%d iterations, snapshots %s, %d samples, %d markers, %d bytes" % (
        len(s["iterations"]), [(x["iteration"], x["trigger"], x["bytes"]) for x in s["snapshots"]], s["samples"],
        s["markers"], os.path.getsize(path)))
    return s


def export(name, s, pick, target):
    snaps = [x for x in s["snapshots"] if pick(x)]
    if not snaps:
        note(target + ": export", False, "no snapshot to export")
        return
    path = os.path.join(results, target)
    p = subprocess.run([cli, "export", os.path.join(results, name + ".memlens"), "--snapshot", str(snaps[-1]["id"]),
                        "-o", path], capture_output=True, text=True)
    if p.returncode != 0:
        note(target + ": export", False, p.stderr.strip())
        return
    with open(path, "rb") as f:
        d = pickle.load(f)
    ok = isinstance(d, dict) and "segments" in d and "device_traces" in d
    st = subprocess.run([cli, "stats", path, "--json"], capture_output=True, text=True)
    note(target + ": export", ok and st.returncode == 0,
         "snapshot %d, %d bytes; pickle keys %s; memlens-cli stats exit %d" % (
             snaps[-1]["id"], os.path.getsize(path), sorted(d)[:6] if isinstance(d, dict) else type(d).__name__,
             st.returncode))


summary = {}
s = session("train")
if s:
    ph = [i["phase"] for i in s["iterations"]]
    note("train: iterations", ph == (["train"] * 30 + ["eval"] * 5) * 2, "%d train, %d eval" % (ph.count("train"), ph.count("eval")))
    trig = sorted((x["iteration"], x["trigger"]) for x in s["snapshots"])
    note("train: snapshots", trig[:2] == [(5, "iteration"), (31, "iteration")] and trig[-1][1] == "exit", str(trig))
    p = s["process"]
    note("train: process", p["allocator_snapshots"] is True and p["devices"] and p["cuda"],
         "torch %s, CUDA %s, devices %s" % (p["torch"], p["cuda"], [d.get("name") for d in p["devices"]]))
    note("train: samples", s["samples"] > 0, "%d samples (NVML and torch)" % s["samples"])
    summary["train"] = s
s = session("oom")
if s:
    note("oom: snapshot", any(x["trigger"] == "oom" for x in s["snapshots"]), "triggers %s" % [x["trigger"] for x in s["snapshots"]])
    note("oom: marker", s["markers"] >= 1, "%d markers" % s["markers"])
    export("oom", s, lambda x: x["trigger"] == "oom", "oom.pickle")
    summary["oom"] = s
s = session("leak")
if s:
    trig = [(x["iteration"], x["trigger"]) for x in s["snapshots"]]
    note("leak: iterations", len(s["iterations"]) == 40, "%d iterations" % len(s["iterations"]))
    note("leak: snapshots", [t for t in trig if t[1] == "iteration"] == [(10, "iteration"), (20, "iteration"),
                                                                        (30, "iteration"), (40, "iteration")], str(trig))
    export("leak", s, lambda x: x["trigger"] == "iteration", "leak.pickle")
    summary["leak"] = s
s = session("cxx")
if s:
    ph = [i["phase"] for i in s["iterations"]]
    note("cxx: iterations", ph[:17] == ["train"] * 12 + ["eval"] * 5, "%s" % ph)
    trig = [(x["iteration"], x["trigger"]) for x in s["snapshots"]]
    note("cxx: snapshots", (3, "iteration") in trig and (10, "iteration") in trig and trig[-1][1] == "exit", str(trig))
    note("cxx: oom snapshot", any(t[1] == "oom" for t in trig),
         "C++ OOM observer %s" % s["process"]["info"].get("oom_observer"))
    summary["cxx"] = s
json.dump(summary, open(os.path.join(work, "sessions.json"), "w"))


# --stack-depth 2: no stack in the exported snapshots is longer than 2 frames
def stacks(o, found):
    """Every 'frames' list of a snapshot: segments, blocks, 2.0's history, device_traces."""
    if isinstance(o, dict):
        for k, v in o.items():
            if k == "frames" and isinstance(v, list):
                found.append(v)
            else:
                stacks(v, found)
    elif isinstance(o, (list, tuple)):
        for v in o:
            stacks(v, found)
    return found


path = os.path.join(work, "depth.memlens")
p = subprocess.run([cli, "session", path, "--json", "--check"], capture_output=True, text=True)
if p.returncode != 0:
    note("depth: session", False, (p.stderr.strip() or "no session")[-300:])
else:
    s = json.loads(p.stdout)
    snaps = s["snapshots"]
    note("depth: snapshots", len(snaps) >= 2, "%s" % [(x["iteration"], x["trigger"], x["bytes"]) for x in snaps])
    for x in snaps:
        target = os.path.join(work, "depth-%d.pickle" % x["id"])
        e = subprocess.run([cli, "export", path, "--snapshot", str(x["id"]), "-o", target], capture_output=True,
                           text=True)
        if e.returncode != 0:
            note("depth: export %d" % x["id"], False, e.stderr.strip())
            continue
        with open(target, "rb") as f:
            found = stacks(pickle.load(f), [])
        longest = max((len(l) for l in found), default=0)
        info = x.get("info", {})
        note("depth: snapshot %d (%s)" % (x["id"], x["trigger"]),
             bool(found) and longest <= 2 and any(len(l) == 2 for l in found) and info.get("stack_depth") == 2,
             "%d stacks, longest %d frames; info stack_depth %r, stacks_trimmed %r" % (
                 len(found), longest, info.get("stack_depth"), info.get("stacks_trimmed")))
EOF


# ---- 7. size limits, summary ------------------------------------------------------------------------------
say "results"
# newer.pickle only while RESULTS stays within 8 files (summary.json is still to come)
if [[ -f $WORK/newer/newer.pickle ]]; then
  if (($(find "$RESULTS" -maxdepth 1 -type f ! -name '.*' | wc -l) + 1 < 8)); then
    cp "$WORK/newer/newer.pickle" "$RESULTS/"
  else
    echo "  newer.pickle stays in $WORK/newer (RESULTS holds 8 files at most)"
  fi
fi
"$PY" - "$RESULTS" "$CHECKS" "$WORK" <<'EOF'
import json, os, sqlite3, sys

results, checks, work = sys.argv[1:4]
# Sessions over 15 MB lose their middle snapshots (the file stays a valid session).
for name in sorted(os.listdir(results)):
    path = os.path.join(results, name)
    if name.endswith(".memlens") and os.path.getsize(path) > 15 * 1000 * 1000:
        db = sqlite3.connect(path)
        ids = [r[0] for r in db.execute("SELECT id FROM snapshots ORDER BY bytes DESC")]
        while ids and os.path.getsize(path) > 15 * 1000 * 1000:
            victim = ids.pop(0)
            db.execute("DELETE FROM snapshot_chunks WHERE snapshot = ?", (victim,))
            db.execute("DELETE FROM snapshots WHERE id = ?", (victim,))
            db.commit()
            db.execute("VACUUM")
            print("  %s: dropped snapshot %d to stay under 16 MB" % (name, victim))
        db.close()


def report(*path):
    """A report the steps above left in the scratch directory ({} where it did not come)."""
    p = os.path.join(work, *path)
    return json.load(open(p)) if os.path.exists(p) else {}


sessions, newer, scale = report("sessions.json"), report("newer", "newer.json"), report("scale", "scale.json")
rows = [json.loads(l) for l in open(checks) if l.strip()] + newer.get("checks", []) + scale.get("checks", [])
files = {n: os.path.getsize(os.path.join(results, n)) for n in sorted(os.listdir(results))}
json.dump({"passed": all(r["ok"] for r in rows), "checks": rows, "files": files, "sessions": sessions,
           "newer": newer, "scale": scale}, open(os.path.join(results, "summary.json"), "w"), indent=1)
print("files:", files)
print("%d checks, %d failed" % (len(rows), sum(not r["ok"] for r in rows)))
sys.exit(0 if all(r["ok"] for r in rows) else 1)
EOF
rc=$?
say "done in $((SECONDS - T0)) s (exit $rc)"
exit $rc
