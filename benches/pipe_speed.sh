#!/usr/bin/env bash
# The pipe against the special paths it replaced (issue 31): the conversions that streamed
# before, on a 2 GiB dense f64 matrix (16384 x 16384 of random mantissas), with the binary
# of an earlier commit (default c543967, the last before the pipe) and this one taking
# turns, dirty pages flushed before each run; medians of RUNS (default 3) with the range,
# wall time and peak resident memory from /usr/bin/time. `cp` + `sync` of the .npy is the
# baseline of the writes, as in BENCHMARKS.md "Out of core".
# Usage: PYTHON=venv/bin/python bash benches/pipe_speed.sh [DIR] [REV]   (numpy; ~12 GiB free in
# DIR; removes its files)
set -euo pipefail
cd "$(dirname "$0")/.."
python3 benches/machine.py  # the CPU model, beside the figures
dir=${1:-$(mktemp -d)}
rev=${2:-c543967}
mkdir -p "$dir"
old_tree="$dir/old-tree"
trap 'rm -rf "$dir"/big.* "$dir"/out* "$dir"/copy.npy; git worktree remove --force "$old_tree" 2>/dev/null || true' EXIT
cargo build --release -p dbdf --bin dbdf -q
git worktree add -f "$old_tree" "$rev" -q 2>/dev/null || true
(cd "$old_tree" && cargo build --release -p dbdf --bin dbdf -q 2>/dev/null ||
    cargo build --release --bin dbdf -q)
new=target/release/dbdf
old="$old_tree/target/release/dbdf"
n=${N:-16384}
"${PYTHON:-python3}" - "$dir/big.npy" "$n" <<'PY'
import sys
import numpy as np
path, n = sys.argv[1], int(sys.argv[2])
# Random mantissas in [1, 2): every bit of the fraction varies, no NaN or subnormal.
big = np.lib.format.open_memmap(path, mode="w+", dtype="<f8", shape=(n, n))
rng = np.random.default_rng(0)
for r in range(0, n, 1024):
    big[r:r + 1024] = 1.0 + rng.random((min(1024, n - r), n))
big.flush()
PY
"$new" convert --quiet "$dir/big.npy" "$dir/big.tiled.dbdf" --tile 1000,1000
"$new" convert --quiet "$dir/big.npy" "$dir/big.sysds" --to systemds --parts 2
cat "$dir"/big.* > /dev/null 2>&1 || true
runs=${RUNS:-3}
: > "$dir/runs.txt"
measure() { # NAME COMMAND...
    local name=$1; shift
    sync
    /usr/bin/time -f "%e %M" -o "$dir/time" "$@" > /dev/null
    read -r secs kib < "$dir/time"
    printf '%-46s %8.3f s %9.1f MiB\n' "$name" "$secs" "$(echo "$kib/1024" | bc -l)" >> "$dir/runs.txt"
    rm -rf "$dir"/out* "$dir/copy.npy"
}
for _ in $(seq "$runs"); do
    measure "cp + sync (baseline)" sh -c 'cp "$1" "$2" && sync "$2"' sh "$dir/big.npy" "$dir/copy.npy"
    for which in old new; do
        bin=${!which}
        measure "$which npy -> dbdf --tile 1000,1000" "$bin" convert --quiet "$dir/big.npy" "$dir/out.dbdf" --tile 1000,1000
        measure "$which npy -> dbdf (one block)" "$bin" convert --quiet "$dir/big.npy" "$dir/out.dbdf"
        measure "$which tiled dbdf -> npy" "$bin" convert --quiet "$dir/big.tiled.dbdf" "$dir/out.npy"
        measure "$which npy -> systemds --parts 2" "$bin" convert --quiet "$dir/big.npy" "$dir/out" --to systemds --parts 2
        measure "$which tiled dbdf -> systemds --parts 2" "$bin" convert --quiet "$dir/big.tiled.dbdf" "$dir/out" --to systemds --parts 2
        measure "$which systemds -> dbdf --keep-blocks" "$bin" convert --quiet "$dir/big.sysds" "$dir/out.dbdf" --from systemds --keep-blocks
    done
done
awk -f benches/medians.awk "$dir/runs.txt"
