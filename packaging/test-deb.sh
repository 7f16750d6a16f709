#!/usr/bin/env bash
# Tests the Debian package the way a user meets it, in a minimal Debian 12 root:
#   packaging/test-deb.sh out/memlens_*.deb [BASE_ROOT]
# BASE_ROOT: a debootstrap --variant=minbase bookworm tree to copy (made here when absent, under
# $MEMLENS_DEB_WORK, default /var/tmp/memlens-deb-test). Needs root (chroot, mounts) and the
# network (the Debian mirror). In the root:
#   1. apt-get install ./memlens_*.deb pulls every dependency (Recommends: gdb, python3-torch)
#   2. python3 -c "import memlens_agent" (the system's python3 finds the agent)
#   3. memlens-cli record -o s.memlens -- python3 job.py   with the system's torch: iterations
#   4. memlens-cli check s.memlens                            names the planted graph-kept leak (exit 3)
#   4b. memlens-cli attach PID --duration 3                   a job started without memlens: iterations
#   5. memlens s.memlens --screenshot out.png                 offscreen, a PNG
#   6. a LibTorch program built with find_package(memlens_capture), recorded: iterations
#   7. apt-get remove memlens leaves none of its files behind
# Prints "test-deb: ok" at the end, or the failing step; exits non-zero on a failure.
set -euo pipefail

DEB=$(readlink -f "${1:?usage: test-deb.sh PACKAGE.deb [BASE_ROOT]}")
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=${MEMLENS_DEB_WORK:-/var/tmp/memlens-deb-test}
BASE=${2:-$WORK/base}
MIRROR=${MEMLENS_DEB_MIRROR:-http://deb.debian.org/debian}
[[ $(id -u) == 0 ]] || { echo "test-deb: needs root (chroot)" >&2; exit 1; }
mkdir -p "$WORK"
if [[ ! -x $BASE/usr/bin/apt-get ]]; then
  command -v debootstrap >/dev/null || apt-get install -y -q debootstrap
  debootstrap --variant=minbase bookworm "$BASE" "$MIRROR"
fi
ROOT=$WORK/root
umount_all() {
  for m in dev/pts dev proc sys; do umountpoint "$ROOT/$m"; done
}
umountpoint() { mountpoint -q "$1" 2>/dev/null && umount -l "$1" || true; }
trap umount_all EXIT
umount_all
rm -rf "$ROOT"
cp -a "$BASE" "$ROOT"
mount -t proc proc "$ROOT/proc"
mount --bind /dev "$ROOT/dev"
mount --bind /dev/pts "$ROOT/dev/pts"
mount -t sysfs sys "$ROOT/sys"
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
mkdir -p "$ROOT/t"
cp "$DEB" "$ROOT/t/"
cp "$REPO/capture/examples/mistakes/graph_kept.py" "$ROOT/t/job.py"
cat >"$ROOT/t/loop.py" <<'PY'
# A training loop started without memlens, for memlens-cli attach.
import time
import torch
net = torch.nn.Linear(16, 4)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
print("ready", flush=True)
for i in range(1200):
    opt.zero_grad()
    net(torch.randn(8, 16)).pow(2).mean().backward()
    opt.step()
    time.sleep(0.05)
PY
cat >"$ROOT/t/train.cpp" <<'CPP'
// A LibTorch program with the memlens capture library (found through CMake).
#include <memlens/capture/Session.h>
#include <torch/torch.h>
int main() {
    memlens::capture::Session capture;
    auto net = torch::nn::Linear(16, 4);
    torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.1));
    for (int i = 0; i < 5; ++i) {
        opt.zero_grad();
        net->forward(torch::randn({8, 16})).pow(2).mean().backward();
        opt.step();
        capture.step();
    }
    return 0;
}
CPP
cat >"$ROOT/t/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.18)
project(trainer CXX)
set(CMAKE_CXX_STANDARD 20)
find_package(memlens_capture REQUIRED)
add_executable(trainer train.cpp)
target_link_libraries(trainer PRIVATE memlens::capture)
CM
cat >"$ROOT/t/run.sh" <<'RUN'
#!/bin/bash
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8
step() { echo "=== test-deb: $*"; }
cd /t
step "1. apt-get install ./memlens_*.deb"
apt-get update -q
apt-get install -y -q ./memlens_*.deb
dpkg -L memlens | sort > /t/files.txt
step "2. the system's python3 imports the agent"
python3 -c "import memlens_agent, sys; print(memlens_agent.__file__)"
step "3. memlens-cli record with the system's torch"
memlens-cli record -o s.memlens -- python3 job.py
memlens-cli session s.memlens --json | python3 -c "import json,sys; s=json.load(sys.stdin); n=len(s['iterations']); print(n, 'iterations'); sys.exit(n < 5)"
step "4. memlens-cli check names the leak (exit 3)"
set +e; memlens-cli check s.memlens; rc=$?; set -e
[[ $rc == 3 ]] || { echo "check exited $rc, expected 3"; exit 1; }
memlens-cli check s.memlens --json > check.json || [[ $? == 3 ]]
python3 -c "import json,sys; f=json.load(open('check.json'))['findings']; print([x['rule'] for x in f]); sys.exit(not any(x['rule']=='graph-kept' for x in f))"
step "4b. memlens-cli attach to a job started without memlens"
python3 loop.py > loop.out &
job=$!
for _ in $(seq 600); do grep -q ready loop.out && break; sleep 0.1; done
memlens-cli attach "$job" -o a.memlens --duration 3
kill -0 "$job"  # detached: the job runs on
kill "$job"; wait "$job" || true
memlens-cli session a.memlens --json | python3 -c "import json,sys; s=json.load(sys.stdin); n=len(s['iterations']); print(n, 'iterations'); sys.exit(n < 5)"
step "5. memlens --screenshot"
QT_QPA_PLATFORM=offscreen memlens s.memlens --screenshot out.png
python3 -c "import sys; d=open('out.png','rb').read(); sys.exit(not (d[:8]==b'\x89PNG\r\n\x1a\n' and len(d)>10000))"
man -w memlens-cli >/dev/null 2>&1 || test -f /usr/share/man/man1/memlens-cli.1.gz
step "6. a LibTorch program finds the capture library through CMake"
apt-get install -y -q --no-install-recommends libtorch-dev cmake g++ make nlohmann-json3-dev libsqlite3-dev \
  zlib1g-dev libzstd-dev liblzma-dev
cmake -S /t -B /t/build -DCMAKE_BUILD_TYPE=Release
cmake --build /t/build
memlens-cli record -o c.memlens -- /t/build/trainer
memlens-cli session c.memlens --json | python3 -c "import json,sys; s=json.load(sys.stdin); n=len(s['iterations']); print(n, 'iterations'); sys.exit(n != 5)"
step "7. apt-get remove leaves nothing behind"
apt-get remove -y -q memlens
left=0
while read -r f; do
  [[ -e $f && ! -d $f ]] && { echo "left behind: $f"; left=1; }
done < /t/files.txt
python3 -c "import memlens_agent" 2>/dev/null && { echo "memlens_agent still importable"; left=1; }
[[ $left == 0 ]]
echo "test-deb: ok"
RUN
chmod +x "$ROOT/t/run.sh"
chroot "$ROOT" /t/run.sh
