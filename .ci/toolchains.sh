# Sourced, not run: puts the project-local guest toolchains first on PATH.
#
#   . .ci/toolchains.sh
#
# .ci/install-guest-toolchains.sh installs componentize-py, wasm-tools and
# go into a Python virtual environment under target/toolchains/ (and jco
# into plugins/js/node_modules/), never into the machine's own Python or
# npm prefix: a clean clone has none of it, so every fresh checkout (and
# every CI run) really installs them from the registries, and a package that
# happens to be on the machine can never hide a broken install step.
# TOOLHOST_TOOLCHAINS moves the directory.
toolhost_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export TOOLHOST_TOOLCHAINS="${TOOLHOST_TOOLCHAINS:-$toolhost_root/target/toolchains}"
case ":$PATH:" in
*":$TOOLHOST_TOOLCHAINS/venv/bin:"*) ;;
*) export PATH="$TOOLHOST_TOOLCHAINS/venv/bin:$PATH" ;;
esac
unset toolhost_root
