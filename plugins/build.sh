#!/usr/bin/env bash
# Builds every plugin under plugins/ into target/plugins/ (test fixtures:
# target/plugins-hostile/ and target/plugins-fixtures/).
#
#   plugins/build.sh            # all languages
#   plugins/build.sh rust       # only some: rust (plugins/rust, plugins/hostile,
#                               # plugins/fixtures),
#                               # python, js, c, go
#
# Example plugins (plugins/rust/* and the other languages) go to
# target/plugins/; the misbehaving test fixtures (plugins/hostile/*) go to
# target/plugins-hostile/, so that pointing a real model at target/plugins
# never offers it `hostile_exit` or a memory bomb. Plugins that only serve a
# peer's test suite (plugins/fixtures/*, e.g. the tools the MCP conformance
# suite calls by name) go to target/plugins-fixtures/ for the same reason.
#
# For each plugin NAME it writes, beside each other in its directory:
#   NAME.wasm   the component (exports toolhost:plugin/tool@0.2.0, or @0.1.0)
#   NAME.toml   its manifest (the plugin's plugin.toml)
#   NAME.data/  the plugin's data/ directory, when it has one (manifests
#               grant it as `host = "NAME.data"`, relative to the manifest)
# so that `toolhost list --plugins target/plugins` sees them all.
# Tool names are unique across the three directories (hostile ones start with
# `hostile_`), so a test may load them together.
#
# Works from any directory. Idempotent: unchanged outputs are not rewritten
# (their mtimes stay, so hot reload and compile caches are not disturbed),
# and a no-op run takes about a second.
#
# Rust guests build with `cargo build --profile plugin --target wasm32-wasip2`
# into target/guest, a target directory of their own: the host build's lock
# on target/ is never waited on (the test suite runs this script from inside
# `cargo test`) and the host's artifacts are never invalidated. The
# wasm32-wasip2 target is installed with rustup if it is missing.
#
# Other languages: plugins/<lang>/build.sh OUT_DIR (owned by that language's
# maintainers, see docs/plugins/<lang>.md) is run for each lang directory
# that has one, when its toolchain is on PATH. A missing toolchain skips that
# language with a note -- unless TOOLHOST_REQUIRE_TOOLCHAINS=1 or CI is set,
# in which case the language's script runs anyway and its failure fails this
# script.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The guest toolchains live in the checkout (.ci/install-guest-toolchains.sh).
# shellcheck source=.ci/toolchains.sh
. "$root/.ci/toolchains.sh"
trap 'echo "plugins/build.sh: FAILED: \`$BASH_COMMAND\` exited $? (line $LINENO)" >&2' ERR
out="$root/target/plugins"
out_hostile="$root/target/plugins-hostile"
out_fixtures="$root/target/plugins-fixtures"
guest_target="$root/target/guest"
cargo="${CARGO:-cargo}"
mkdir -p "$out" "$out_hostile" "$out_fixtures"

langs=("$@")
if [ ${#langs[@]} -eq 0 ]; then
    langs=(rust python js c go)
fi

say() { printf 'plugins/build.sh: %s\n' "$*" >&2; }

# Copies $1 to $2 unless $2 already has the same bytes; the rename makes the
# update atomic for a concurrent reader (another test process, hot reload).
publish_file() {
    local src="$1" dst="$2"
    if [ -f "$dst" ] && cmp -s "$src" "$dst"; then
        return
    fi
    cp "$src" "$dst.tmp.$$"
    mv -f "$dst.tmp.$$" "$dst"
}

# Mirrors directory $1 to $2 unless the trees are already identical.
publish_dir() {
    local src="$1" dst="$2"
    if [ -d "$dst" ] && diff -r -q "$src" "$dst" >/dev/null 2>&1; then
        return
    fi
    rm -rf "$dst.tmp.$$"
    cp -R "$src" "$dst.tmp.$$"
    rm -rf "$dst"
    mv "$dst.tmp.$$" "$dst"
}

build_rust() {
    local crates=() dirs=() dests=() dir name
    for dir in "$root"/plugins/rust/*/ "$root"/plugins/hostile/*/ "$root"/plugins/fixtures/*/; do
        [ -f "$dir/Cargo.toml" ] || continue
        name="$(sed -n 's/^name *= *"\(.*\)"/\1/p' "$dir/Cargo.toml" | head -n 1)"
        crates+=("$name")
        dirs+=("${dir%/}")
        case "$dir" in
        "$root"/plugins/hostile/*) dests+=("$out_hostile") ;;
        "$root"/plugins/fixtures/*) dests+=("$out_fixtures") ;;
        *) dests+=("$out") ;;
        esac
    done
    if [ ${#crates[@]} -eq 0 ]; then
        say "no Rust plugins found"
        return
    fi

    if command -v rustup >/dev/null 2>&1 \
        && ! rustup target list --installed | grep -qx wasm32-wasip2; then
        say "installing the wasm32-wasip2 target"
        rustup target add wasm32-wasip2
    fi

    local args=() crate
    for crate in "${crates[@]}"; do
        args+=(-p "$crate")
    done
    (cd "$root" && CARGO_TARGET_DIR="$guest_target" "$cargo" build --quiet \
        --profile plugin --target wasm32-wasip2 "${args[@]}")

    local i lib dest
    for i in "${!crates[@]}"; do
        lib="${crates[$i]//-/_}"
        dir="${dirs[$i]}"
        dest="${dests[$i]}"
        publish_file "$guest_target/wasm32-wasip2/plugin/$lib.wasm" "$dest/$lib.wasm"
        if [ -f "$dir/plugin.toml" ]; then
            publish_file "$dir/plugin.toml" "$dest/$lib.toml"
        else
            rm -f "$dest/$lib.toml"
        fi
        if [ -d "$dir/data" ]; then
            publish_dir "$dir/data" "$dest/$lib.data"
        fi
    done
    say "rust: ${#crates[@]} plugins in $out, $out_hostile and $out_fixtures"
}

# Whether the toolchain that plugins/<lang>/build.sh needs is installed.
# (languages maintainers' section: keep in step with those scripts)
toolchain_present() {
    case "$1" in
    python) command -v componentize-py >/dev/null 2>&1 ;;
    js) command -v node >/dev/null 2>&1 ;;
    c) [ -n "${CC:-}" ] || command -v clang-14 >/dev/null 2>&1 \
        || command -v clang >/dev/null 2>&1 ;;
    go) command -v go >/dev/null 2>&1 && command -v wasm-tools >/dev/null 2>&1 ;;
    *) return 1 ;;
    esac
}

for lang in "${langs[@]}"; do
    case "$lang" in
    rust)
        build_rust
        ;;
    # ---- other languages (languages maintainers' section) -------------------
    python | js | c | go)
        script="$root/plugins/$lang/build.sh"
        [ -f "$script" ] || continue
        if toolchain_present "$lang" || [ "${TOOLHOST_REQUIRE_TOOLCHAINS:-}" = 1 ] \
            || [ -n "${CI:-}" ]; then
            bash "$script" "$out"
        else
            say "skipping $lang plugins: toolchain not found" \
                "(run .ci/install-guest-toolchains.sh; TOOLHOST_REQUIRE_TOOLCHAINS=1 makes this an error)"
        fi
        ;;
    # -------------------------------------------------------------------------
    *)
        say "unknown language '$lang' (expected rust, python, js, c or go)"
        exit 2
        ;;
    esac
done
