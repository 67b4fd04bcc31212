#!/usr/bin/env bash
# Files for DAPHNE, checked by DAPHNE's own reader: `daphne-read`, built from DAPHNE's
# unmodified sources in the shared reference material (../shared/daphne-reader, beside the
# repository as CI has it; not vendored here), once plainly and once with AddressSanitizer
# and UBSan. Every golden file, files the CLI and the library write for DAPHNE (read the way
# DaphneDSL types them), and the frame-label guard; see tests/reference/daphne.py. Without the
# reader's sources, a C++ compiler or python3 it says SKIPPED and exits 0; any mismatch,
# crash or sanitizer report exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/../.."

skip() {
    echo "daphne: SKIPPED: $*"
    exit 0
}

reader_src=../shared/daphne-reader
[ -f "$reader_src/build.sh" ] || skip "no $reader_src beside the repository"
command -v python3 >/dev/null || skip "no python3 on this machine"

# Builds daphne-read into $1 (with EXTRA_FLAGS) unless one built from the same sources with
# the same flags is there (by content: CI's copy of the sources is new on every run).
build() {
    local dir=$1 sources
    sources=$( (cd "$reader_src" && find . -type f -print0 | sort -z | xargs -0 sha256sum;
        echo "${EXTRA_FLAGS:-}"; "${CXX:-g++}" --version 2>&1 | head -1) | sha256sum)
    if [ -x "$dir/daphne-read" ] && [ "$(cat "$dir.sources" 2>/dev/null)" = "$sources" ]; then
        return
    fi
    bash "$reader_src/build.sh" "$dir" >"$dir.log" 2>&1 || {
        cat "$dir.log"
        skip "daphne-read did not build (see above)"
    }
    echo "$sources" >"$dir.sources"
}
mkdir -p target
build target/daphne-read
# Unoptimized: the sanitizers check every access all the same, and the build is far shorter
# than at DAPHNE's -O3.
EXTRA_FLAGS="-O0 -g -fsanitize=address,undefined -fno-omit-frame-pointer" build target/daphne-read-asan

cargo build -q -p dbdf --bin dbdf
out=target/daphne-check
rm -rf "$out"
mkdir -p "$out"
cargo run -q --example daphne_files -- "$out/library" >/dev/null
ASAN_OPTIONS=detect_leaks=0 python3 tests/reference/daphne.py target/debug/dbdf \
    target/daphne-read/daphne-read target/daphne-read-asan/daphne-read "$out/library" "$out"
echo "daphne: OK"
