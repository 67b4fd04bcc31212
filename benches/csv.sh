#!/usr/bin/env bash
# CSV -> .dbdf (issue 15): a 4000 x 2500 matrix of random f64 written by numpy.savetxt
# (%.17g, about 200 MB), converted by `dbdf convert` (untiled and tiled: two passes on both
# cores, a band of rows in memory), against pandas.read_csv of the same file (its C parser,
# into a NumPy array), taking turns RUNS times each; medians, with peak resident memory.
# Usage: bash benches/csv.sh [DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
python3 benches/machine.py  # the CPU model, beside the figures
dir=${1:-$(mktemp -d)}
mkdir -p "$dir"
trap 'rm -f "$dir"/m.csv "$dir"/m.dbdf' EXIT
venv=target/bench-venv
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/python" -c "import pandas" 2>/dev/null || "$venv/bin/pip" install -q numpy pandas
cargo build --release -p dbdf --bin dbdf -q
"$venv/bin/python" - "$dir/m.csv" <<'PY'
import sys
import numpy as np
a = np.random.default_rng(1).standard_normal((4000, 2500))
np.savetxt(sys.argv[1], a, delimiter=",", fmt="%.17g")
PY
ls -l "$dir/m.csv" | awk '{printf "input: %s bytes\n", $5}'
cat "$dir/m.csv" > /dev/null
. benches/measure.sh
runs=${RUNS:-5}
: > "$dir/runs.txt"
for _ in $(seq "$runs"); do
    measure "pandas.read_csv -> numpy (baseline)" "$venv/bin/python" -c "
import sys, pandas as pd
a = pd.read_csv(sys.argv[1], header=None).to_numpy()
assert a.shape == (4000, 2500)" "$dir/m.csv" >> "$dir/runs.txt"
    rm -f "$dir/m.dbdf"; sync
    measure "dbdf convert m.csv m.dbdf" target/release/dbdf convert "$dir/m.csv" "$dir/m.dbdf" >> "$dir/runs.txt"
    rm -f "$dir/m.dbdf"; sync
    measure "dbdf convert ... --tile 1000,1000" target/release/dbdf convert "$dir/m.csv" "$dir/m.dbdf" --tile 1000,1000 >> "$dir/runs.txt"
done
awk -f benches/medians.awk "$dir/runs.txt"
ls -l "$dir/m.dbdf" | awk '{printf "tiled .dbdf: %s bytes (the values: 80000000)\n", $5}'
