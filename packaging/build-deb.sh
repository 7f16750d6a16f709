#!/usr/bin/env bash
# Builds the Debian package of memlens, the whole product:
#   /usr/bin/memlens, /usr/bin/memlens-cli        the window; the command line (record, attach, check...)
#   /usr/share/memlens/python                      the Python agent (and boot/ for record), importable
#   /usr/lib/python3/dist-packages/memlens.pth       by the system's python3 as memlens_agent
#   /usr/include/memlens, /usr/lib/memlens,          the C++ capture library for LibTorch programs:
#   /usr/lib/cmake/memlens_capture                   find_package(memlens_capture), memlens::capture
#   desktop entry, icon, MIME types (.memlens sessions and snapshot pickles, by content),
#   man pages memlens(1) and memlens-cli(1) made from their --help, the README, the example.
#   packaging/build-deb.sh [BUILD_DIR]      (default build-deb/; the package goes to out/)
# Built RelWithDebInfo (the flags of the default preset, so ccache serves most of it) and
# installed stripped. Needs what packaging/install-deps.sh installs, LibTorch included (without
# it the package has no capture library). packaging/test-deb.sh installs it in a fresh Debian 12.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${1:-$REPO/build-deb}
OUT=$REPO/out
VERSION=$(sed -nE 's/^project\(memlens VERSION ([0-9.]+).*/\1/p' "$REPO/CMakeLists.txt")
ARCH=$(dpkg --print-architecture)
[[ -n $VERSION ]] || { echo "build-deb: no version in CMakeLists.txt" >&2; exit 1; }
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$REPO" log -1 --format=%ct 2>/dev/null || date +%s)}

cmake -S "$REPO" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
      -DMEMLENS_BUILD_TESTS=OFF -DMEMLENS_PYTHON_PTH_DIR=lib/python3/dist-packages
cmake --build "$BUILD" --parallel 2

STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
PKG=$STAGE/pkg
DESTDIR=$PKG cmake --install "$BUILD" --strip
if [[ -z $(find "$PKG/usr/lib" -name memlens_captureConfig.cmake) ]]; then
  echo "build-deb: warning: LibTorch was not found: the package has no C++ capture library" >&2
fi

# documentation and man pages
install -D -m 644 "$REPO/README.md" "$PKG/usr/share/doc/memlens/README.md"
install -D -m 644 "$REPO/capture/README.md" "$PKG/usr/share/doc/memlens/capture.md"
gzip -9n "$PKG/usr/share/doc/memlens/README.md" "$PKG/usr/share/doc/memlens/capture.md"
cat >"$PKG/usr/share/doc/memlens/copyright" <<COPY
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: memlens

Files: *
Copyright: 2026 memlens developers
License: other
 The memlens developers have not published a license for this code yet.
COPY
# a native package's changelog (Debian's format), dated by SOURCE_DATE_EPOCH
{
  printf 'memlens (%s) unstable; urgency=medium\n\n' "$VERSION"
  printf '  * The window, memlens-cli (record, attach, check, diff, whatif), the Python\n'
  printf '    agent and the C++ capture library; see README.md.\n\n'
  printf ' -- memlens developers <dev@memlens.invalid>  %s\n' "$(date -u -R -d "@$SOURCE_DATE_EPOCH")"
} | gzip -9n >"$PKG/usr/share/doc/memlens/changelog.gz"
mkdir -p "$PKG/usr/share/man/man1"
man() {  # man BINARY SUMMARY
  python3 "$REPO/packaging/make-man.py" "$BUILD/app/$1" "$1" "$2" "$VERSION" | gzip -9n >"$PKG/usr/share/man/man1/$1.1.gz"
}
man memlens "see where the GPU memory of a PyTorch job goes, and who keeps it"
man memlens-cli "read, record, attach to and diagnose the GPU memory of PyTorch jobs"

# Shared-library dependencies of the installed ELF files.
elves=()
while IFS= read -r -d '' f; do
  [[ $(head -c 4 "$f" | od -An -c | tr -d ' ') == 177ELF ]] && elves+=("$f")
done < <(find "$PKG" -type f -print0)
if ((${#elves[@]} == 0)); then
  echo "build-deb: cmake --install installed no program" >&2
  exit 1
fi
mkdir -p "$STAGE/debian"
printf 'Source: memlens\n\nPackage: memlens\nArchitecture: any\n' >"$STAGE/debian/control"
depends=$(cd "$STAGE" && dpkg-shlibdeps -O "${elves[@]}" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')

mkdir -p "$PKG/DEBIAN"
cat >"$PKG/DEBIAN/control" <<EOF2
Package: memlens
Version: $VERSION
Architecture: $ARCH
Maintainer: memlens developers <dev@memlens.invalid>
Section: devel
Priority: optional
Depends: $depends, python3
Recommends: gdb, python3-torch
Suggests: libtorch-dev, nlohmann-json3-dev, libsqlite3-dev, zlib1g-dev, libzstd-dev, liblzma-dev, cmake
Installed-Size: $(du -sk "$PKG" | cut -f1)
Description: where the GPU memory of a PyTorch job goes, and who keeps it
 memlens reads PyTorch CUDA memory snapshots and traces and shows which memory
 is live, which is cache, which is fragmented, which reference holds it, and
 since which iteration; its doctor names the mistake and the fix.
 .
 memlens-cli records training jobs (record), attaches to running ones
 (attach, with gdb), and diagnoses snapshots and sessions (check, diff).
 The Python agent is importable as memlens_agent; LibTorch programs link
 the capture library with find_package(memlens_capture) (needs libtorch-dev).
EOF2
# MIME and desktop databases, the icon cache: dpkg triggers of shared-mime-info and
# desktop-file-utils do it when they are installed.

mkdir -p "$OUT"
deb=$OUT/memlens_${VERSION}_${ARCH}.deb
rm -f "$deb"
dpkg-deb --root-owner-group -Zxz --build "$PKG" "$deb" >/dev/null
echo "build-deb: wrote $deb"
if command -v lintian >/dev/null; then
  lintian --tag-display-limit 0 "$deb" || true
fi
