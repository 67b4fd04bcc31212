#!/usr/bin/env bash
# MatrixMarket -> .dbdf (issues 15 and 47): a 1e6 x 1e6 coordinate file with 1e7 real
# entries in scattered row order, converted by `dbdf convert`, against fast_matrix_market's
# mmread of the same file in the same run (PyPI fast_matrix_market, in a virtual environment
# under target/, or $VENV): its whole process, and its time in the process (the call alone,
# as issue 47 counts it, with the process's peak memory). Times and peak resident memory
# from /usr/bin/time, taking turns RUNS times; medians, and the median of each turn's ratio.
# Usage: bash benches/mtx.sh [DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
python3 benches/machine.py  # the CPU model, beside the figures
dir=${1:-$(mktemp -d)}
mkdir -p "$dir"
trap 'rm -f "$dir"/big.mtx "$dir"/big.dbdf' EXIT
venv=${VENV:-target/bench-venv}
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q fast_matrix_market numpy scipy
fi
cargo build --release -p dbdf --bin dbdf -q
"$venv/bin/python" - "$dir/big.mtx" <<'PY'
import sys
import numpy as np
n, nnz = 1_000_000, 10_000_000
k = np.arange(nnz, dtype=np.int64)
rows = (k * 104729 + 12345) % n          # scattered rows, no cell twice:
cols = k // 10                           # ten entries per column block
values = np.random.default_rng(1).random(nnz)
with open(sys.argv[1], "w") as f:
    f.write("%%MatrixMarket matrix coordinate real general\n")
    f.write(f"{n} {n} {nnz}\n")
    for start in range(0, nnz, 1_000_000):
        s = slice(start, start + 1_000_000)
        block = np.column_stack((rows[s] + 1, cols[s] + 1))
        lines = [f"{r} {c} {v!r}\n" for (r, c), v in zip(block.tolist(), values[s].tolist())]
        f.writelines(lines)
PY
ls -l "$dir/big.mtx" | awk '{printf "input: %s bytes\n", $5}'
cat "$dir/big.mtx" > /dev/null
. benches/measure.sh
# The machine's speed drifts (a shared host): the two take turns, RUNS times each, and the
# medians count. dbdf's first time includes writing the .dbdf (synced); mmread only reads.
runs=${RUNS:-5}
: > "$dir/runs.txt"
for _ in $(seq "$runs"); do
    measure "fast_matrix_market.mmread + tocsr" "$venv/bin/python" -c "
import sys, fast_matrix_market as fmm
m = fmm.mmread(sys.argv[1]).tocsr()
assert m.nnz == 10_000_000" "$dir/big.mtx" >> "$dir/runs.txt"
    measure "fast_matrix_market.mmread alone (COO)" "$venv/bin/python" -c "
import sys, fast_matrix_market as fmm
m = fmm.mmread(sys.argv[1])
assert m.nnz == 10_000_000" "$dir/big.mtx" >> "$dir/runs.txt"
    "$venv/bin/python" -c "
import resource, sys, time, fast_matrix_market as fmm
start = time.perf_counter()
m = fmm.mmread(sys.argv[1])
secs = time.perf_counter() - start
assert m.nnz == 10_000_000
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f'{\"fast_matrix_market.mmread in-process\":<40} {secs:8.3f} s {peak:9.1f} MiB')" "$dir/big.mtx" >> "$dir/runs.txt"
    rm -f "$dir/big.dbdf"
    measure "dbdf convert big.mtx big.dbdf --no-sync" target/release/dbdf convert "$dir/big.mtx" "$dir/big.dbdf" --no-sync >> "$dir/runs.txt"
    rm -f "$dir/big.dbdf"; sync
    measure "dbdf convert big.mtx big.dbdf" target/release/dbdf convert "$dir/big.mtx" "$dir/big.dbdf" >> "$dir/runs.txt"
    # Like for like with mmread, which writes nothing: the .dbdf bytes to standard output
    # (encoded in memory, then dropped), no file and no wait for the disk.
    measure "dbdf convert big.mtx - > /dev/null" target/release/dbdf convert "$dir/big.mtx" - --to dbdf >> "$dir/runs.txt"
done
awk -f benches/medians.awk "$dir/runs.txt"
# Issue 47's measure: each turn's --no-sync conversion over the mmread call of that turn.
awk '/^fast_matrix_market.mmread in-process/ { m = $(NF - 3) }
     /^dbdf convert big.mtx big.dbdf --no-sync/ { r[++n] = $(NF - 3) / m }
     END { for (a = 1; a <= n; a++) for (b = a + 1; b <= n; b++) if (r[b] < r[a]) { x = r[a]; r[a] = r[b]; r[b] = x }
           printf "dbdf --no-sync / mmread in-process: median %.2fx (%.2fx to %.2fx, %d turns)\n", r[int((n + 1) / 2)], r[1], r[n], n }' "$dir/runs.txt"
ls -l "$dir/big.dbdf" | awk '{printf ".dbdf: %s bytes (CSR arrays in memory: 8 (n+1) + 12 nnz = 128000008)\n", $5}'
