#!/usr/bin/env bash
# Build every Python plugin in plugins/python/*/ into OUT_DIR as NAME.wasm,
# with its manifest beside it as NAME.toml.
#
#   plugins/python/build.sh OUT_DIR [NAME...]
#
# Needs componentize-py (.ci/install-guest-toolchains.sh installs the pinned
# version). A plugin is a directory with app.py (the module that declares its
# tools with toolhost_sdk) and plugin.toml; NAME is the directory name.
# It is built against plugin contract 0.2 (wit/0.2), unless a file named
# `contract` beside app.py says 0.1 (wit/: JSON results only; py_units stays
# there as the tests' 0.1 Python plugin).
# An output newer than every input is left alone.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=.ci/toolchains.sh
. "$root/.ci/toolchains.sh"
trap 'echo "plugins/python/build.sh: FAILED: \`$BASH_COMMAND\` exited $? (line $LINENO)" >&2' ERR
out="${1:?usage: plugins/python/build.sh OUT_DIR [NAME...]}"
shift
mkdir -p "$out"
out="$(cd "$out" && pwd)"

# Copy unless the destination has the same bytes, so unchanged outputs keep
# their mtimes (hot reload and the up-to-date checks rely on them).
publish_file() {
  if [ -f "$2" ] && cmp -s "$1" "$2"; then return; fi
  cp "$1" "$2.tmp.$$" && mv -f "$2.tmp.$$" "$2"
}
publish_dir() {
  if [ -d "$2" ] && diff -r -q "$1" "$2" >/dev/null 2>&1; then return; fi
  rm -rf "$2.tmp.$$" && cp -R "$1" "$2.tmp.$$" && rm -rf "$2" && mv "$2.tmp.$$" "$2"
}

if ! command -v componentize-py >/dev/null 2>&1; then
  echo "plugins/python/build.sh: componentize-py not found; run .ci/install-guest-toolchains.sh" >&2
  exit 1
fi

names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for dir in "$here"/*/; do
    [ -f "$dir/app.py" ] && names+=("$(basename "$dir")")
  done
fi

for name in "${names[@]}"; do
  src="$here/$name"
  if [ ! -f "$src/app.py" ]; then
    echo "plugins/python/build.sh: $src/app.py not found" >&2
    exit 1
  fi
  wasm="$out/$name.wasm"
  series="0.2"
  if [ -f "$src/contract" ]; then series="$(tr -d '[:space:]' <"$src/contract")"; fi
  case "$series" in
    0.1) wit="$root/wit" ;;
    0.2) wit="$root/wit/0.2" ;;
    *) echo "plugins/python/build.sh: $src/contract says '$series'; expected 0.1 or 0.2" >&2; exit 1 ;;
  esac
  newer="$(find "$src" "$root/sdk-guest/python" "$root/wit" -type f -newer "$wasm" -not -name plugin.toml -not -path "$src/data/*" \
    -not -path '*/__pycache__/*' -print -quit 2>/dev/null || true)"
  if [ -f "$wasm" ] && [ -z "$newer" ]; then
    echo "python: $name is up to date"
  else
    echo "python: building $name (contract $series)"
    # componentize-py imports the app at build time (it snapshots the
    # initialised interpreter, so module-level work is done once, here).
    (cd "$src" && PYTHONDONTWRITEBYTECODE=1 componentize-py \
      -d "$wit" -w plugin componentize app \
      -p "$src" -p "$root/sdk-guest/python" \
      -o "$wasm.tmp.$$" >/dev/null)
    mv "$wasm.tmp.$$" "$wasm"
  fi
  if [ -f "$src/plugin.toml" ]; then
    publish_file "$src/plugin.toml" "$out/$name.toml"
  else
    rm -f "$out/$name.toml"
  fi
  # A directory the manifest grants as host = "NAME.data" travels with it.
  if [ -d "$src/data" ]; then
    publish_dir "$src/data" "$out/$name.data"
  fi
done
