#!/usr/bin/env bash
# Prepares this machine for building and running the room: the wasm32-wasip1
# target and Viceroy (Fastly's local Compute runtime), the project's build of it.
# Safe to run again: it installs only what is missing. Sourced by scripts/demo.sh
# and scripts/test.sh.
set -euo pipefail

VICEROY_VERSION="0.22.0"
export PATH="$HOME/.cargo/bin:$PATH"

if ! rustup target list --installed | grep -qx wasm32-wasip1; then
  echo "setup: adding the wasm32-wasip1 target"
  rustup target add wasm32-wasip1
fi

# Viceroy $VICEROY_VERSION with the project's patch (tools/viceroy-faults/): Fastly's
# per-execution limits on store reads enforced, and reads failed on demand for the
# fail-safe tests (docs/development.md, "The project's Viceroy"). Installed as
# $HOME/.cargo/bin/viceroy, in place of a plain one; its `--version` names the patch's
# stamp, so a rerun is instant and a changed patch is rebuilt (incrementally: the
# sources and their build stay in ~/.cache/viceroy-faults).
viceroy_faults="$(dirname "${BASH_SOURCE[0]}")/../tools/viceroy-faults/build.sh"
if ! "$viceroy_faults" --check; then
  echo "setup: building the project's Viceroy $VICEROY_VERSION (about 20 minutes on 2 cores, once)"
  "$viceroy_faults"
fi

# The browser tests (the binary tests/browser/) drive Debian's
# Chromium with playwright-core (the npm package without bundled browsers; their
# downloader does not work here) and check pages with axe-core. Set SETUP_BROWSER=0
# to skip this part (scripts/demo.sh does). If Chromium or Node cannot be installed,
# this warns, and the browser tests then fail unless WAITING_ROOM_SKIP_BROWSER=1.
if [ "${SETUP_BROWSER:-1}" != 0 ]; then
  browser_packages=()
  [ -x /usr/bin/chromium ] || browser_packages+=(chromium)
  # Real nginx, against which tests/blackbox/hostile_paths.rs checks its model of
  # nginx's reading of a path (WAITING_ROOM_SKIP_NGINX=1 skips that check).
  [ -x /usr/sbin/nginx ] || browser_packages+=(nginx-light)
  # promtool (Debian's prometheus package), with which tools/wrctl/tests/promtool.rs
  # checks and tests the alerts' rules, and the prometheus server that
  # tools/wrctl/tests/prometheus.rs runs on loopback (WAITING_ROOM_SKIP_PROMTOOL=1 skips both).
  { command -v promtool && command -v prometheus; } >/dev/null 2>&1 || browser_packages+=(prometheus)
  command -v node >/dev/null 2>&1 || browser_packages+=(nodejs npm)
  if [ "${#browser_packages[@]}" -gt 0 ]; then
    echo "setup: installing ${browser_packages[*]} (Debian packages) for the browser tests"
    as_root=()
    [ "$(id -u)" -eq 0 ] || as_root=(sudo -n)
    if ! { "${as_root[@]}" apt-get update &&
      "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${browser_packages[@]}"; }; then
      echo "setup: WARNING: could not install ${browser_packages[*]}; the browser tests will fail" \
        "(WAITING_ROOM_SKIP_BROWSER=1 skips them)" >&2
    fi
  fi
  browser_dir="$(dirname "${BASH_SOURCE[0]}")/../tests/browser"
  if command -v npm >/dev/null 2>&1 && { [ ! -d "$browser_dir/node_modules/playwright-core" ] ||
    [ ! -d "$browser_dir/node_modules/axe-core" ]; }; then
    echo "setup: installing the browser tests' npm packages (playwright-core, axe-core)"
    (cd "$browser_dir" && npm ci --no-audit --no-fund)
  fi
fi
