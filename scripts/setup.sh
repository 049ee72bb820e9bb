#!/usr/bin/env bash
# Prepares this machine for building and running the room: the wasm32-wasip1
# target and Viceroy (Fastly's local Compute runtime). Safe to run again: it
# installs only what is missing. Sourced by scripts/demo.sh and scripts/test.sh.
set -euo pipefail

VICEROY_VERSION="0.22.0"
export PATH="$HOME/.cargo/bin:$PATH"

if ! rustup target list --installed | grep -qx wasm32-wasip1; then
  echo "setup: adding the wasm32-wasip1 target"
  rustup target add wasm32-wasip1
fi

if ! viceroy --version 2>/dev/null | grep -q "$VICEROY_VERSION"; then
  echo "setup: installing Viceroy $VICEROY_VERSION (about 16 minutes on 2 cores, once)"
  cargo install --locked "viceroy@$VICEROY_VERSION"
fi
