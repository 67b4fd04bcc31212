#!/usr/bin/env bash
# MatrixMarket -> .dbdf (issues 15, 47 and 88): three 1e6 x 1e6 coordinate files of 1e7 real
# entries made by scipy's mmwrite, as users get them: entries in random order, the same
# sorted by column, and random order with 9 significant digits. Each converted by `dbdf
# convert --no-sync`, against fast_matrix_market's mmread of the same file in the same run
# (its call alone, timed in its process) and mmread(...).tocsr() (the same work as ours: a
# CSR matrix), from PyPI in a virtual environment under target/ (or $VENV). Times and peak
# resident memory (/usr/bin/time for ours, getrusage for Python's), taking turns RUNS
# times; medians, and the median of each turn's ratio.
# Usage: RUNS=5 bash benches/mtx.sh [DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
python3 benches/machine.py  # the CPU model, beside the figures
dir=${1:-$(mktemp -d)}
mkdir -p "$dir"
trap 'rm -f "$dir"/*.mtx "$dir"/out.dbdf' EXIT
venv=${VENV:-target/bench-venv}
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q fast_matrix_market numpy scipy
fi
cargo build --release -p dbdf --bin dbdf -q
dbdf=${CARGO_TARGET_DIR:-target}/release/dbdf
"$venv/bin/python" - "$dir" <<'PY'
import sys
import numpy as np
import scipy.io
import scipy.sparse as sp
n, nnz = 1_000_000, 10_000_000
rng = np.random.default_rng(7)
cells = rng.choice(n * n, size=nnz, replace=False)  # random order, no cell twice
rows, cols, values = cells // n, cells % n, rng.random(nnz)
random = sp.coo_array((values, (rows, cols)), shape=(n, n))
scipy.io.mmwrite(f"{sys.argv[1]}/random.mtx", random)
by_col = np.lexsort((rows, cols))
scipy.io.mmwrite(f"{sys.argv[1]}/colsorted.mtx",
                 sp.coo_array((values[by_col], (rows[by_col], cols[by_col])), shape=(n, n)))
scipy.io.mmwrite(f"{sys.argv[1]}/digits9.mtx", random, precision=9)
PY
. benches/measure.sh
runs=${RUNS:-5}
: > "$dir/runs.txt"
for _ in $(seq "$runs"); do
    for f in random colsorted digits9; do
        cat "$dir/$f.mtx" > /dev/null
        "$venv/bin/python" -c "
import resource, sys, time, fast_matrix_market as fmm
start = time.perf_counter()
m = fmm.mmread(sys.argv[1])
alone = time.perf_counter() - start
m = m.tocsr()
both = time.perf_counter() - start
assert m.nnz == 10_000_000
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f'{\"$f: mmread in-process\":<40} {alone:8.3f} s {peak:9.1f} MiB')
print(f'{\"$f: mmread + tocsr in-process\":<40} {both:8.3f} s {peak:9.1f} MiB')" "$dir/$f.mtx" >> "$dir/runs.txt"
        rm -f "$dir/out.dbdf"
        measure "$f: dbdf convert --no-sync" "$dbdf" convert "$dir/$f.mtx" "$dir/out.dbdf" --no-sync >> "$dir/runs.txt"
    done
done
awk -f benches/medians.awk "$dir/runs.txt"
# Each turn's conversion over that turn's mmread, and over its mmread + tocsr.
for f in random colsorted digits9; do
    for base in "mmread in-process" "mmread + tocsr in-process"; do
        awk -v f="$f" -v base="$base" '
             index($0, f ": " base) == 1 && substr($0, length(f ": " base) + 1, 1) == " " { m = $(NF - 3) }
             index($0, f ": dbdf convert --no-sync") == 1 { r[++n] = $(NF - 3) / m }
             END { for (a = 1; a <= n; a++) for (b = a + 1; b <= n; b++) if (r[b] < r[a]) { x = r[a]; r[a] = r[b]; r[b] = x }
                   printf "%s: dbdf / %s: median %.2fx (%.2fx to %.2fx, %d turns)\n", f, base, r[int((n + 1) / 2)], r[1], r[n], n }' "$dir/runs.txt"
    done
done
