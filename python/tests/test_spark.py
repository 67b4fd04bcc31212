"""The Spark data source `dbdf` on a real Spark (pyspark 4, `local[2]`, Python workers in
their own processes): reads against numpy and scipy, partitions that follow tiles and
segments, writes of DAPHNE's segments read back equal and valid, save modes, failures and a
killed job that leave nothing.

Where the package ships the JVM source's jar (`dbdf.spark.jar()`, as CI's wheel does), the
session loads it: `"dbdf"` is then the JVM source (reads in the JVM, writes through the Python
one), and reads are tested through both it and the Python source, `"dbdf_python"`."""

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import dbdf

pyspark = pytest.importorskip("pyspark", minversion="4.0")
pytest.importorskip("pyarrow")

from pyspark.sql import functions as F  # noqa: E402


def _jar():
    try:
        return dbdf.spark.jar()
    except FileNotFoundError:
        return None


JAR = _jar()
# The sources that read: "dbdf" (the JVM's where the jar is loaded) and the Python one.
SOURCES = ["dbdf", "dbdf_python"] if JAR else ["dbdf"]
needs_jar = pytest.mark.skipif(JAR is None, reason="a package built without the JVM source")


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    # Spark's Python workers run this interpreter, which has dbdf installed.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    builder = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
    )
    if JAR:
        builder = builder.config("spark.jars", JAR)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    dbdf.spark.register(session)
    yield session
    session.stop()


def _sorted(df, by):
    return df.orderBy(by).toPandas()


@pytest.mark.parametrize("source", SOURCES)
def test_a_dense_matrix_reads_as_columns_partitioned_by_its_tiles(tmp_path, spark, source):
    m = np.random.default_rng(3).random((1000, 12))
    path = str(tmp_path / "m.dbdf")
    dbdf.save(path, m, tile=(300, 5))
    df = spark.read.format(source).option("rowIndex", "i").load(path)
    assert df.columns == ["i"] + [f"c{j}" for j in range(12)]
    assert dict(df.dtypes)["c0"] == "double" and dict(df.dtypes)["i"] == "bigint"
    # One partition per row of tiles.
    assert df.rdd.getNumPartitions() == 4
    got = _sorted(df, "i")
    np.testing.assert_array_equal(got["i"], np.arange(1000))
    np.testing.assert_array_equal(got.drop(columns="i").to_numpy(), m)
    sums = df.agg(*[F.sum(f"c{j}") for j in range(12)]).first()
    np.testing.assert_allclose(list(sums), m.sum(axis=0), rtol=1e-12)
    assert df.count() == 1000


def test_layouts_array_and_triples_and_chosen_columns(tmp_path, spark):
    sp = pytest.importorskip("scipy.sparse")
    m = np.arange(40, dtype=np.int32).reshape(8, 5)
    dense = str(tmp_path / "d.dbdf")
    dbdf.save(dense, m)
    # The JVM source hands the array and triples layouts to the Python source.
    for source in SOURCES:
        rows = _sorted(spark.read.format(source).option("layout", "array")
                       .option("rowIndex", "i").load(dense), "i")
        np.testing.assert_array_equal(np.stack(rows["values"].to_list()), m)
        picked = spark.read.format(source).option("columns", "c3,1").load(dense)
        assert picked.columns == ["c3", "c1"]
        np.testing.assert_array_equal(picked.toPandas().to_numpy(), m[:, [3, 1]])
        with pytest.raises(Exception, match="no column 'c9'"):
            spark.read.format(source).option("columns", "c9").load(dense).collect()

    csr = sp.random(300, 200, density=0.05, format="csr", random_state=4, dtype=np.float32)
    path = str(tmp_path / "s.dbdf")
    dbdf.save(path, csr, tile=(100, 200))
    for source in SOURCES:
        triples = spark.read.format(source).option("layout", "triples").load(path)
        assert triples.dtypes == [("row", "bigint"), ("col", "bigint"), ("value", "float")]
        got = triples.toPandas()
        back = sp.coo_array((got["value"], (got["row"], got["col"])), shape=csr.shape)
        assert (back.tocsr() != csr).nnz == 0 and len(got) == csr.nnz


def test_a_frame_keeps_labels_types_and_unsigned_types_round_trip(tmp_path, spark, cli):
    n = 500
    rng = np.random.default_rng(5)
    frame = {
        "u8": rng.integers(0, 256, n).astype(np.uint8),
        "u32": rng.integers(0, 2**32, n).astype(np.uint32),
        "u64": np.array([2**64 - 1 - i for i in range(n)], dtype=np.uint64),
        "i8": rng.integers(-128, 128, n).astype(np.int8),
        "i32": rng.integers(-(2**31), 2**31, n).astype(np.int32),
        "i64": rng.integers(-(2**62), 2**62, n),
        "f32": rng.random(n).astype(np.float32),
        "f64": rng.random(n),
    }
    path = str(tmp_path / "f.dbdf")
    dbdf.save(path, frame)
    for source in SOURCES:
        df = spark.read.format(source).load(path)
        assert df.dtypes == [("u8", "smallint"), ("u32", "bigint"), ("u64", "decimal(20,0)"),
                             ("i8", "tinyint"), ("i32", "int"), ("i64", "bigint"),
                             ("f32", "float"), ("f64", "double")]
        got = df.toPandas()
        for label, values in frame.items():
            np.testing.assert_array_equal(np.array([int(v) if label == "u64" else v
                                                    for v in got[label]]).astype(values.dtype),
                                          values, err_msg=f"{source} {label}")
        # Only the chosen columns.
        chosen = spark.read.format(source).option("columns", "f64,u8").load(path)
        assert chosen.columns == ["f64", "u8"]
        np.testing.assert_array_equal(chosen.toPandas()["u8"], frame["u8"])
    # Written back: the file's types again (kept in the fields' metadata), in DAPHNE's layout.
    out = str(tmp_path / "f.hdfs")
    df.write.format("dbdf").mode("overwrite").save(out)
    back = dbdf.load(_converted(out, tmp_path))
    for label, values in frame.items():
        assert back[label].dtype == values.dtype, label
        np.testing.assert_array_equal(back[label], values, err_msg=label)
    _validate_segments(out, cli)


def _converted(folder, tmp_path):
    path = str(tmp_path / f"{os.path.basename(folder)}.back.dbdf")
    dbdf.convert(folder, path)
    return path


def _validate_segments(folder, cli):
    segments = sorted(p for p in os.listdir(folder) if not p.endswith(".meta"))
    assert segments, folder
    for name in segments:
        done = cli("validate", os.path.join(folder, name))
        assert done.returncode == 0
    return segments


def test_segments_in_partition_order_empty_partitions_skipped(tmp_path, spark, cli):
    out = str(tmp_path / "r.hdfs")
    df = spark.range(0, 10000, numPartitions=4).selectExpr(
        "id", "cast(id * 0.5 as double) as x").where("id < 2000 or id >= 7500")
    df.write.format("dbdf").mode("overwrite").save(out)
    # Partitions 1 and 2 hold rows 2500..7500 only: filtered away, so no segment.
    segments = _validate_segments(out, cli)
    assert segments == ["r.hdfs_segment_1", "r.hdfs_segment_2"]
    with open(f"{out}.meta") as f:
        assert '"isHDFS":true' in f.read()
    back = dbdf.load(_converted(out, tmp_path))
    want = np.r_[0:2000, 7500:10000]
    np.testing.assert_array_equal(back["id"], want)
    np.testing.assert_array_equal(back["x"], want * 0.5)
    # Read by Spark: a partition per segment; row numbers run on across segments.
    for source in SOURCES:
        again = spark.read.format(source).option("rowIndex", "r").load(out)
        assert again.rdd.getNumPartitions() == 2
        assert again.agg(F.sum("x")).first()[0] == pytest.approx(want.sum() * 0.5)
        got = _sorted(again, "r")
        np.testing.assert_array_equal(got["r"], np.arange(len(want)))
        np.testing.assert_array_equal(got["id"], want)


def test_append_adds_segments_and_overwrite_replaces(tmp_path, spark):
    out = str(tmp_path / "a.hdfs")
    part = spark.range(0, 100, numPartitions=2).selectExpr("id", "cast(id as double) as v")
    part.write.format("dbdf").mode("append").save(out)  # appending to nothing creates it
    part.where("id >= 50").write.format("dbdf").mode("append").save(out)
    assert len([p for p in os.listdir(out) if not p.endswith(".meta")]) == 3
    back = dbdf.load(_converted(out, tmp_path))
    np.testing.assert_array_equal(back["id"], np.r_[0:100, 50:100])
    # Disagreeing columns: refused, the folder as it was.
    with pytest.raises(Exception, match="does not continue the ones before it"):
        part.selectExpr("id").write.format("dbdf").mode("append").save(out)
    np.testing.assert_array_equal(dbdf.load(_converted(out, tmp_path))["id"],
                                  np.r_[0:100, 50:100])
    part.where("id < 10").write.format("dbdf").mode("overwrite").save(out)
    np.testing.assert_array_equal(dbdf.load(_converted(out, tmp_path))["id"], np.arange(10))
    assert _leftovers(tmp_path) == []


def _leftovers(folder):
    return [p for p in os.listdir(folder) if ".tmp-" in p]


def test_save_modes_error_and_ignore(tmp_path, spark):
    out = str(tmp_path / "s.hdfs")
    df = spark.range(5).selectExpr("cast(id as int) as k")
    if JAR:
        # The JVM source takes every mode, as Spark's built-in sources do.
        df.write.format("dbdf").save(out)
        with pytest.raises(Exception, match="PATH_ALREADY_EXISTS"):
            df.write.format("dbdf").save(out)
        df.where("k = 0").write.format("dbdf").mode("ignore").save(out)
        np.testing.assert_array_equal(dbdf.load(_converted(out, tmp_path))["k"], np.arange(5))
        shutil.rmtree(out)
        os.remove(out + ".meta")
    # Spark itself refuses the mode for Python sources: dbdf.spark.save gives it.
    with pytest.raises(Exception, match="ErrorIfExists"):
        df.write.format(SOURCES[-1]).save(out)
    dbdf.spark.save(df, out)
    with pytest.raises(FileExistsError):
        dbdf.spark.save(df, out)
    dbdf.spark.save(spark.range(3).selectExpr("cast(id as int) as k"), out, mode="ignore")
    dbdf.spark.save(df.where("k > 2"), out, mode="overwrite")
    np.testing.assert_array_equal(dbdf.load(_converted(out, tmp_path))["k"], [3, 4])
    # A matrix instead of a frame.
    m = str(tmp_path / "m.hdfs")
    dbdf.spark.save(spark.range(6, numPartitions=2).selectExpr("cast(id as double) a",
                                                               "cast(-id as double) b"),
                    m, object="matrix")
    got = dbdf.load(_converted(m, tmp_path))
    np.testing.assert_array_equal(got, np.stack([np.arange(6.0), -np.arange(6.0)], axis=1))


def test_bad_columns_are_refused_and_a_failed_job_leaves_nothing(tmp_path, spark):
    out = str(tmp_path / "n.hdfs")
    nulls = spark.range(10, numPartitions=2).selectExpr("id", "if(id = 7, null, id) as v")
    with pytest.raises(Exception, match=r"partition 1 \(rows from its first\): cannot convert "
                       r'the null at row 2 of column "v" to DAPHNE: .*option nulls=zero'):
        nulls.write.format("dbdf").mode("overwrite").save(out)
    nulls.write.format("dbdf").option("nulls", "zero").mode("overwrite").save(out)
    np.testing.assert_array_equal(dbdf.load(_converted(out, tmp_path))["v"],
                                  [0, 1, 2, 3, 4, 5, 6, 0, 8, 9])
    shutil.rmtree(out)
    os.remove(out + ".meta")
    for cast, why in [("string", "holds integers and floats only"), ("decimal(10,2)", "cast it to double"), ("short", "no 16-bit integers")]:
        with pytest.raises(Exception, match=f"column 's' is a [a-z0-9(),]+: DAPHNE.s .*{why}"):
            spark.range(3).selectExpr(f"cast(id as {cast}) as s").write.format("dbdf").mode(
                "overwrite").save(out)
    # A task that fails after others have written their segments.
    boom = F.udf(lambda i: 1.0 / (i - 9000) if i != 9000 else 1 // 0, "double")
    with pytest.raises(Exception):
        spark.range(10000, numPartitions=4).select("id", boom("id").alias("x")).write.format(
            "dbdf").mode("overwrite").save(out)
    assert not os.path.exists(out) and not os.path.exists(out + ".meta")
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("source", SOURCES)
def test_a_changed_file_is_never_mixed_with_the_planned_one(tmp_path, spark, source):
    path = str(tmp_path / "c.dbdf")
    dbdf.save(path, np.ones((10, 2)))
    df = spark.read.format(source).load(path)
    time.sleep(0.01)
    dbdf.save(path, np.zeros((12, 2)))
    if source == "dbdf_python":
        # The Python source's DataFrame keeps the plan made when it was loaded: refused.
        with pytest.raises(Exception, match="changed after the read was planned"):
            df.collect()
    else:
        # The JVM source plans a DataFrame's read at its first action: the new file, whole.
        np.testing.assert_array_equal(np.array(df.collect()), np.zeros((12, 2)))


KILLED_JOB = """
import os, sys, time
os.environ["PYSPARK_PYTHON"] = sys.executable
from pyspark.sql import SparkSession, functions as F
spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
slow = F.udf(lambda i: (time.sleep(0.5) if i % 1000 == 0 else None) or float(i), "double")
# No dbdf.spark.register: Spark finds the source in the installed pyspark_dbdf module.
(spark.range(20000, numPartitions=8).select("id", slow("id").alias("x"))
    .write.format("dbdf").mode("overwrite").save(sys.argv[1]))
"""


def test_a_killed_job_leaves_no_result_and_the_old_one_whole(tmp_path, spark):
    out = str(tmp_path / "k.hdfs")
    spark.range(3).selectExpr("id").write.format("dbdf").mode("overwrite").save(out)
    before = sorted(os.listdir(out))
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(KILLED_JOB))
    job = subprocess.Popen([sys.executable, str(script), out], start_new_session=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    # Killed once some task has written its segment into the scratch folder.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and job.poll() is None:
        scratch = [p for p in _leftovers(tmp_path)]
        if scratch and any(f.endswith(".dbdf") for s in scratch
                           for f in os.listdir(tmp_path / s)):
            break
        time.sleep(0.1)
    assert job.poll() is None, job.stderr.read().decode()[-2000:]
    os.killpg(job.pid, signal.SIGKILL)
    job.wait()
    assert sorted(os.listdir(out)) == before
    np.testing.assert_array_equal(dbdf.load(_converted(out, tmp_path))["id"], [0, 1, 2])


def _plan(df):
    return df._jdf.queryExecution().executedPlan().toString()


@needs_jar
def test_the_jvm_source_counts_from_headers_and_reads_only_the_columns_used(tmp_path, spark):
    m = np.random.default_rng(8).random((5000, 30))
    path = str(tmp_path / "m.dbdf")
    dbdf.save(path, m, tile=(1000, 30))
    df = spark.read.format("dbdf").load(path)
    # count() and counts of columns: from the plan's row count, no scan of values.
    counted = df.agg(F.count("*"), F.count("c3"))
    assert "LocalTableScan" in _plan(counted) and "BatchScan" not in _plan(counted)
    assert tuple(counted.first()) == (5000, 5000)
    assert df.count() == 5000
    # A filter needs its column: scanned, and counted by Spark.
    assert df.where("c0 > 0.5").count() == int((m[:, 0] > 0.5).sum())
    # Only the columns a query uses are read.
    one = df.select("c7", "c2")
    assert "struct<c2:double,c7:double>" in _plan(one)
    np.testing.assert_array_equal(one.toPandas().to_numpy(), m[:, [7, 2]])
    sums = df.agg(F.sum("c29"), F.sum("c0")).first()
    np.testing.assert_allclose(list(sums), m[:, [29, 0]].sum(axis=0), rtol=1e-12)
    # Many batches a partition, the last one short: each fills the reused vectors again.
    small = spark.read.format("dbdf").option("batchRows", 333).option("rowIndex", "i").load(path)
    got = _sorted(small.select("i", "c5", "c1"), "i")
    np.testing.assert_array_equal(got["i"], np.arange(5000))
    np.testing.assert_array_equal(got[["c5", "c1"]].to_numpy(), m[:, [5, 1]])
    assert small.agg(F.sum("c9")).first()[0] == pytest.approx(m[:, 9].sum(), rel=1e-12)


@needs_jar
def test_the_jvm_source_reads_csr_matrices_and_empty_objects(tmp_path, spark):
    sp = pytest.importorskip("scipy.sparse")
    csr = sp.random(300, 40, density=0.05, format="csr", random_state=4, dtype=np.float32)
    path = str(tmp_path / "s.dbdf")
    dbdf.save(path, csr, tile=(100, 40))
    df = spark.read.format("dbdf").option("rowIndex", "i").load(path)
    assert df.rdd.getNumPartitions() == 3 and dict(df.dtypes)["c0"] == "float"
    got = _sorted(df, "i").drop(columns="i").to_numpy()
    np.testing.assert_array_equal(got, csr.toarray())
    empty = str(tmp_path / "e.dbdf")
    dbdf.save(empty, np.zeros((0, 3), dtype=np.int64))
    none = spark.read.format("dbdf").load(empty)
    assert none.dtypes == [("c0", "bigint"), ("c1", "bigint"), ("c2", "bigint")]
    assert none.count() == 0 and none.collect() == []
    assert none.agg(F.sum("c1")).first()[0] is None


@needs_jar
def test_the_jvm_source_refuses_what_it_cannot_read_in_one_line(tmp_path, spark):
    path = str(tmp_path / "m.dbdf")
    dbdf.save(path, np.ones((4, 2)))
    def read():
        return spark.read.format("dbdf")

    with pytest.raises(Exception, match="no object 3; the file holds 1"):
        read().option("object", "3").load(path)
    with pytest.raises(Exception, match=f"{tmp_path / 'gone.dbdf'}"):
        read().load(str(tmp_path / "gone.dbdf"))
    # Layouts it does not give itself are the Python source's: its scan, its refusals.
    assert "BatchScan dbdf" in _plan(read().load(path))
    assert "BatchScan dbdf_python" in _plan(read().option("layout", "array").load(path))
    with pytest.raises(Exception, match="layout must be one of columns, array, triples"):
        read().option("layout", "rows").load(path)
    with pytest.raises(Exception, match="the schema given, struct<c0:bigint,c1:double>, is "
                       "not the file's, struct<c0:double,c1:double>"):
        read().schema("c0 bigint, c1 double").load(path).collect()
    same = read().schema("c0 double, c1 double").load(path)
    assert same.count() == 4 and same.agg(F.sum("c1")).first()[0] == 4.0
    bad = tmp_path / "bad.dbdf"
    bad.write_bytes(b"\x01\x09" + b"\x00" * 30)
    with pytest.raises(Exception, match=f"{bad}: unknown data type code 9 at byte 1"):
        read().load(str(bad))
