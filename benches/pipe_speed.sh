#!/usr/bin/env bash
# The pipe against the special paths it replaced (issue 31): the conversions that streamed
# before, on a 2 GiB dense f64 matrix (16384 x 16384 of random mantissas), with the binary
# of an earlier commit (default c543967, the last before the pipe) and this one taking
# turns, dirty pages flushed before each run; medians of RUNS (default 3) with the range,
# wall time and peak resident memory from /usr/bin/time. `cp` + `sync` of the .npy is the
# baseline of the writes, as in BENCHMARKS.md "Out of core".
# Usage: bash benches/pipe_speed.sh [DIR] [REV]   (needs ~12 GiB free in DIR; removes its files)
set -euo pipefail
cd "$(dirname "$0")/.."
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
python3 - "$dir/big.npy" "$n" <<'PY'
import os, struct, sys
path, n = sys.argv[1], int(sys.argv[2])
header = "{'descr': '<f8', 'fortran_order': False, 'shape': (%d, %d), }" % (n, n)
header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
with open(path, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode())
    left = n * n
    while left:
        count = min(left, 1 << 22)
        raw = bytearray(os.urandom(8 * count))
        # Random mantissas, exponent of 1.0..2.0: finite values, no NaN payloads.
        for k in range(7, len(raw), 8):
            raw[k] = 0x3F
            raw[k - 1] |= 0xF0
        f.write(raw)
        left -= count
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
