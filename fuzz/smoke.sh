#!/usr/bin/env bash
# A short fuzz run of every target on its committed minimized corpus (fuzz/seeds/<target>):
# what .ci/run does where a nightly toolchain is installed. SECONDS per target (default 4).
# Built unoptimized and without AddressSanitizer, which compiles in about a minute (the C
# codecs included) and runs every seed in a few seconds (with the sanitizer it takes four
# times as long); the long runs in README.md use AddressSanitizer.
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-4}
targets=$(sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml | grep -v serde_daphne-fuzz)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! cargo +nightly fuzz build --dev --sanitizer none >"$work/build.log" 2>&1; then
    grep -n -B2 -A12 -E "^error|panicked" "$work/build.log" | head -150 || true
    tail -30 "$work/build.log"
    df -h . /tmp
    echo "fuzz: the targets did not build"
    exit 1
fi
tail -1 "$work/build.log"
bin=target/x86_64-unknown-linux-gnu/debug
for target in $targets; do
    [ -d "seeds/$target" ] || { echo "fuzz: no seeds/$target"; exit 1; }
    mkdir -p "$work/$target"
    # New inputs go to the scratch directory; the committed seeds are only read.
    if ! "$bin/$target" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
        -artifact_prefix="$work/" -print_final_stats=1 "$work/$target" "seeds/$target" \
        >"$work/$target.log" 2>&1; then
        tail -40 "$work/$target.log"
        echo "fuzz: $target FAILED; the input, in base64 (the scratch directory goes away):"
        for input in "$work"/crash-* "$work"/oom-* "$work"/timeout-*; do
            [ -f "$input" ] && base64 "$input" | head -200
        done
        exit 1
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$target.log")
    echo "fuzz: $target ok, $runs executions in ${seconds}s on $(ls "seeds/$target" | wc -l) seeds"
done
