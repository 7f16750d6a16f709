#!/usr/bin/env bash
# Builds a Debian package of memlens: what `cmake --install` installs (the window, memlens-cli),
# plus the desktop entry, the icon and the example snapshot from resources/.
#   packaging/build-deb.sh [BUILD_DIR]      (default build-deb/; the package goes to out/)
# Needs what packaging/install-deps.sh installs (dpkg-dev comes with build-essential).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${1:-$REPO/build-deb}
OUT=$REPO/out
VERSION=$(sed -nE 's/^project\(memlens VERSION ([0-9.]+).*/\1/p' "$REPO/CMakeLists.txt")
ARCH=$(dpkg --print-architecture)
[[ -n $VERSION ]] || { echo "build-deb: no version in CMakeLists.txt" >&2; exit 1; }

cmake -S "$REPO" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
      -DMEMLENS_BUILD_TESTS=OFF
cmake --build "$BUILD" --parallel 2

STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
PKG=$STAGE/pkg
DESTDIR=$PKG cmake --install "$BUILD"

# resources/ (installed by resources/CMakeLists.txt when the top level includes it)
put() { [[ -e $PKG/$2 ]] || install -D -m 644 "$REPO/resources/$1" "$PKG/$2"; }
put memlens.desktop usr/share/applications/memlens.desktop
put icons/memlens.svg usr/share/icons/hicolor/scalable/apps/memlens.svg
put example.pickle usr/share/memlens/example.pickle

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
cat >"$PKG/DEBIAN/control" <<EOF
Package: memlens
Version: $VERSION
Architecture: $ARCH
Maintainer: memlens developers <dev@memlens.invalid>
Section: devel
Priority: optional
Depends: $depends
Installed-Size: $(du -sk "$PKG" | cut -f1)
Description: where the GPU memory of a PyTorch job goes
 memlens reads PyTorch CUDA memory snapshots and traces and shows which memory
 is live, which is cache, which is fragmented, which reference holds it, and
 since which iteration. Includes memlens-cli (stats, timeline, state).
EOF

mkdir -p "$OUT"
deb=$OUT/memlens_${VERSION}_${ARCH}.deb
dpkg-deb --root-owner-group --build "$PKG" "$deb" >/dev/null
echo "build-deb: wrote $deb"
