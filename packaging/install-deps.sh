#!/usr/bin/env bash
# Installs the Debian 12 packages memlens needs to build, run and test.
# Idempotent: does nothing (and needs no network) when everything is there.
#   packaging/install-deps.sh            build + app + tests
#   packaging/install-deps.sh --minimal  build + command line only (no window, no capture)
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  python3
  qt6-base-dev libqcustomplot-dev libgraphviz-dev libsqlite3-dev
  xvfb xauth
  libgtest-dev nlohmann-json3-dev
  clang libclang-rt-14-dev
)
if [[ "${1:-}" != "--minimal" ]]; then
  packages+=(python3-torch libtorch-dev)
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
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q
"${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
