#!/usr/bin/env bash
# Makes the folder that capture/tests/gpu/run.sh takes as MEMLENS_GPU_PREBUILT, from a build made
# on this machine (Debian 12), for a GPU machine that may lack CMake's packages (zstd, SQLite,
# nlohmann) and cannot install any:
#
#   bin/memlens-cli    relinked with RUNPATH $ORIGIN/../lib (so the shared libraries below are
#                      found where the machine lacks them; the jobs it starts are not affected)
#   lib/               libmemlens_model.a, libmemlens_recorder.a (debug info stripped), and the
#                      shared libraries memlens-cli needs beyond libc and libstdc++
#   include/           nlohmann/ and sqlite3.h, for compiling the C++ capture library there
#
#   capture/tests/gpu/prebuild.sh BUILD_DIR OUT_DIR     (BUILD_DIR: a Ninja build, e.g. build/)
set -euo pipefail
if [[ $# -ne 2 ]]; then
  echo "usage: $0 BUILD_DIR OUT_DIR" >&2
  exit 2
fi
B=$(cd "$1" && pwd)
mkdir -p "$2"
O=$(cd "$2" && pwd)
rm -rf "${O:?}"/bin "$O"/lib "$O"/include
mkdir -p "$O/bin" "$O/lib" "$O/include"
cmake --build "$B" --target memlens-cli memlens_recorder memlens_model >/dev/null
# the link command of memlens-cli, writing to OUT_DIR, with the RUNPATH added
link=$(cd "$B" && ninja -t commands app/memlens-cli | tail -1)
[[ $link == *" -o app/memlens-cli "* ]] || { echo "unexpected link command: $link" >&2; exit 1; }
link=${link/ -o app\/memlens-cli / -o $O/bin/memlens-cli -Wl,-rpath,'\$ORIGIN/../lib' }
(cd "$B" && eval "$link")
strip --strip-debug "$O/bin/memlens-cli"
cp "$B/model/libmemlens_model.a" "$B/capture/libmemlens_recorder.a" "$O/lib/"
strip --strip-debug "$O"/lib/*.a
ldd "$O/bin/memlens-cli" | awk '$3 ~ /^\// { print $3 }' | grep -E 'sqlite3|zstd|lzma|libz\.' | while read -r so; do
  cp -L "$so" "$O/lib/$(basename "$so")"
done
cp -r /usr/include/nlohmann "$O/include/"
cp /usr/include/sqlite3.h "$O/include/"
"$O/bin/memlens-cli" --version
du -sh "$O"
