#!/usr/bin/env bash
# Builds and installs the project's Viceroy: Viceroy 0.22.0 with viceroy-faults.patch,
# which enforces Fastly's per-execution limits (32 config-store lookups, 5 Secret Store
# reads; VICEROY_LOOKUP_LIMIT / VICEROY_SECRET_LIMIT override them) and fails the reads
# a request names in its viceroy-fail-lookup / viceroy-fail-secret headers
# (docs/development.md, "The project's Viceroy"). scripts/setup.sh runs it.
#
# Usage: tools/viceroy-faults/build.sh [--check]
#   --check  exit 0 when the installed Viceroy is this patch's build, 1 otherwise
#
# VICEROY_FAULTS_BIN    where to install (default $HOME/.cargo/bin/viceroy)
# VICEROY_FAULTS_CACHE  the sources and their target, kept so that a rebuild after a
#                       change of the patch only recompiles the two patched crates
#                       (default ${XDG_CACHE_HOME:-$HOME/.cache}/viceroy-faults)
#
# The installed binary's `--version` is "0.22.0 viceroy-faults STAMP", STAMP the hash of
# this script and the patch: a changed patch is rebuilt, an unchanged one is not, and a
# plain Viceroy at the same place is replaced.
set -euo pipefail

VERSION="0.22.0"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
patch_file="$here/viceroy-faults.patch"
bin="${VICEROY_FAULTS_BIN:-$HOME/.cargo/bin/viceroy}"
cache="${VICEROY_FAULTS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/viceroy-faults}"
stamp="$(cat "$here/build.sh" "$patch_file" | sha256sum | cut -c1-16)"

installed() {
  [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -qx "viceroy $VERSION viceroy-faults $stamp"
}

if [ "${1:-}" = "--check" ]; then
  installed
  exit
fi
if installed; then
  echo "viceroy-faults: $bin is up to date ($stamp)"
  exit 0
fi

# The published sources of viceroy and viceroy-lib, as cargo unpacks them from the
# registry; when they are not there, a throwaway manifest that depends on both makes
# `cargo fetch` download them (nothing is built).
cargo_home="${CARGO_HOME:-$HOME/.cargo}"
sources() {
  ls -d "$cargo_home"/registry/src/*/"viceroy-$VERSION" 2>/dev/null | head -1
}
if [ -z "$(sources)" ] || [ ! -d "$(dirname "$(sources)")/viceroy-lib-$VERSION" ]; then
  echo "viceroy-faults: fetching the sources of viceroy $VERSION"
  mkdir -p "$cache/fetch/src"
  cat >"$cache/fetch/Cargo.toml" <<EOF
[package]
name = "viceroy-faults-fetch"
version = "0.0.0"
edition = "2021"
publish = false

[workspace]

[dependencies]
viceroy = "=$VERSION"
viceroy-lib = "=$VERSION"
EOF
  : >"$cache/fetch/src/lib.rs"
  host="$(rustc -vV | sed -n 's/^host: //p')"
  (cd "$cache/fetch" && cargo fetch --target "$host")
fi
registry="$(dirname "$(sources)")"
[ -d "$registry/viceroy-$VERSION" ] && [ -d "$registry/viceroy-lib-$VERSION" ] || {
  echo "viceroy-faults: the sources of viceroy $VERSION are not in $cargo_home/registry/src" >&2
  exit 1
}

# A fresh copy of both crates, patched. The target directory stays, so only what the
# patch touches is compiled again. A copy whose files are unchanged keeps its times
# (cp -p), so cargo does not rebuild what the patch did not change.
work="$cache/work"
mkdir -p "$work"
fresh="$(mktemp -d "$cache/fresh.XXXXXX")"
trap 'rm -rf "$fresh"' EXIT
cp -rp "$registry/viceroy-$VERSION" "$registry/viceroy-lib-$VERSION" "$fresh/"
patch -s -p1 -d "$fresh" <"$patch_file"
# The binary crate uses the patched library from its path: viceroy-lib's entry in the
# published Cargo.lock loses its registry source and checksum, and every other crate
# keeps its published version (the build is --locked).
awk '
  /^\[\[package\]\]/ { lib = 0 }
  /^name = "viceroy-lib"$/ { lib = 1 }
  lib && (/^source = / || /^checksum = /) { next }
  { print }
' "$fresh/viceroy-$VERSION/Cargo.lock" >"$fresh/Cargo.lock" &&
  mv "$fresh/Cargo.lock" "$fresh/viceroy-$VERSION/Cargo.lock"
for crate in "viceroy-$VERSION" "viceroy-lib-$VERSION"; do
  # Replace only the files that differ, so unchanged files keep their times.
  mkdir -p "$work/$crate"
  (cd "$fresh/$crate" && find . -type f) | while read -r f; do
    if ! cmp -s "$fresh/$crate/$f" "$work/$crate/$f"; then
      mkdir -p "$(dirname "$work/$crate/$f")"
      cp -p "$fresh/$crate/$f" "$work/$crate/$f"
      touch "$work/$crate/$f"
    fi
  done
  # Files the patch no longer adds.
  (cd "$work/$crate" && find . -path ./target -prune -o -type f -print) | while read -r f; do
    [ -e "$fresh/$crate/$f" ] || rm -f "$work/$crate/$f"
  done
done

echo "viceroy-faults: building Viceroy $VERSION with the patch (about 20 minutes on 2 cores the first time)"
start=$(date +%s)
(cd "$work/viceroy-$VERSION" && VICEROY_FAULTS_STAMP="$stamp" cargo build --release --locked)
echo "viceroy-faults: built in $(($(date +%s) - start)) s"
mkdir -p "$(dirname "$bin")"
install -m 755 "$work/viceroy-$VERSION/target/release/viceroy" "$bin.viceroy-faults.tmp"
mv "$bin.viceroy-faults.tmp" "$bin"
installed || {
  echo "viceroy-faults: $bin --version does not name stamp $stamp" >&2
  exit 1
}
echo "viceroy-faults: installed $bin ($("$bin" --version))"
