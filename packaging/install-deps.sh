#!/usr/bin/env bash
# Installs the Debian 12 packages memlens needs to build, run and test, from a minimal
# Debian 12 on (compilers and cmake included).
# Idempotent: does nothing, and needs no network, when everything is there; runs
# apt-get update only when something must be installed; uses sudo only when not root.
#   packaging/install-deps.sh            build + app + tests + fuzzing + sanitizers + capture
#   packaging/install-deps.sh --app      what building and opening the window needs (README's
#                                        first command): no torch, no Xvfb, no clang
#   packaging/install-deps.sh --minimal  build + command line + tests of model/ and cli/
#                                        (configure with -DMEMLENS_BUILD_GUI=OFF)
#   packaging/install-deps.sh --list     print the packages it would check, and exit
set -euo pipefail

mode=${1:-full}
case $mode in
  full | --app | --minimal | --list) ;;
  *) echo "usage: $0 [--app | --minimal | --list]" >&2; exit 2 ;;
esac

# Build tools and the model/command-line dependencies.
packages=(
  build-essential cmake ninja-build pkg-config git
  python3
  nlohmann-json3-dev libgtest-dev
  # memory_viz's JSON form of a snapshot, read as a stream (model/JsonSnapshot)
  rapidjson-dev
  # session files (model/SessionWriter, SessionFile) are SQLite databases
  libsqlite3-dev
  # compressed snapshots (.gz, .zst, .xz), decompressed as they are read (model/Decompressor)
  zlib1g-dev libzstd-dev liblzma-dev
)
if [[ $mode != --minimal ]]; then
  # the memlens window (views/, app/)
  packages+=(qt6-base-dev libqcustomplot-dev libgraphviz-dev fonts-dejavu-core)
  # memlens-cli attach and File > Attach: the debugger puts the agent into a running Python
  # 3.8-3.13 job (3.14 and later use sys.remote_exec)
  packages+=(gdb)
fi
if [[ $mode != --app ]]; then
  # the fuzz, asan and tsan presets
  packages+=(clang libclang-rt-14-dev)
fi
if [[ $mode == full || $mode == --list ]]; then
  packages+=(
    # widget tests and screenshots without a display
    xvfb xauth
    # capture/: Python agent and LibTorch capture; Debian's python3 has torch
    python3-torch libtorch-dev
  )
fi

if [[ $mode == --list ]]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "memlens: installing ${missing[*]}" >&2
sudo=()
if [[ $(id -u) -ne 0 ]]; then
  if ! command -v sudo >/dev/null; then
    echo "memlens: not root and no sudo; as root run: apt-get install ${missing[*]}" >&2
    exit 1
  fi
  sudo=(sudo)
fi
# sudo resets the environment, so pass DEBIAN_FRONTEND through env.
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -q --no-install-recommends "${missing[@]}"
