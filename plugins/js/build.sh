#!/usr/bin/env bash
# Build every JavaScript plugin in plugins/js/*/ into OUT_DIR as NAME.wasm,
# with its manifest beside it as NAME.toml.
#
#   plugins/js/build.sh OUT_DIR [NAME...]
#
# A plugin is a directory with plugin.js (which exports `tool`, built with
# sdk-guest/js/toolhost.js) and plugin.toml; NAME is the directory name.
# Components are built against plugin contract 0.2 (wit/0.2).
# The JS engine is QuickJS by default (1.7 MB components, sub-ms calls);
# JS_BACKEND=starlingmonkey selects SpiderMonkey (12 MB, full web APIs).
# jco comes from plugins/js/package-lock.json (installed here on first use). An output newer than every input is left alone.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=.ci/toolchains.sh
. "$root/.ci/toolchains.sh"
trap 'echo "plugins/js/build.sh: FAILED: \`$BASH_COMMAND\` exited $? (line $LINENO)" >&2' ERR
out="${1:?usage: plugins/js/build.sh OUT_DIR [NAME...]}"
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
backend="${JS_BACKEND:-quickjs}"
case "$backend" in
  quickjs|qjs) backend_args=(--backend quickjs --backend-qjs-disable-async) ;;
  starlingmonkey|sm) backend_args=(--backend starlingmonkey --disable http fetch-event) ;;
  *) echo "plugins/js/build.sh: JS_BACKEND must be quickjs or starlingmonkey, not $backend" >&2; exit 1 ;;
esac

if ! command -v node >/dev/null 2>&1; then
  echo "plugins/js/build.sh: node not found; run .ci/install-guest-toolchains.sh" >&2
  exit 1
fi
jco="$here/node_modules/.bin/jco"
if [ ! -x "$jco" ]; then
  # `npm install --no-save`, not `npm ci`: see .ci/install-guest-toolchains.sh.
  echo "js: installing jco from package-lock.json"
  (cd "$here" && npm install --no-save --no-audit --no-fund --loglevel=error)
fi

names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for dir in "$here"/*/; do
    [ -f "$dir/plugin.js" ] && names+=("$(basename "$dir")")
  done
fi

for name in "${names[@]}"; do
  src="$here/$name"
  if [ ! -f "$src/plugin.js" ]; then
    echo "plugins/js/build.sh: $src/plugin.js not found" >&2
    exit 1
  fi
  wasm="$out/$name.wasm"
  newer="$(find "$src" "$root/sdk-guest/js" "$root/wit" "$here/package-lock.json" \
    -type f -newer "$wasm" -not -name plugin.toml -not -path "$src/data/*" -print -quit 2>/dev/null || true)"
  if [ -f "$wasm" ] && [ -z "$newer" ] && [ -z "${JS_BACKEND:-}" ]; then
    echo "js: $name is up to date"
  else
    echo "js: building $name ($backend)"
    # --bundle: the plugin and the SDK become one module (the engine's
    # snapshot step only sees one file); absolute entry path because the
    # QuickJS backend resolves a relative one twice.
    (cd "$here" && "$jco" componentize "$src/plugin.js" --bundle \
      --bundle-config "$here/rolldown.config.mjs" "${backend_args[@]}" \
      --wit "$root/wit/0.2" --world-name plugin -o "$wasm.tmp.$$" 2>&1 \
      | grep -v -e 'Unknown user config' -e '^OK Successfully written' || true)
    [ -f "$wasm.tmp.$$" ] || { echo "plugins/js/build.sh: building $name failed" >&2; exit 1; }
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
