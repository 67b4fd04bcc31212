"""The Spark data source `dbdf` on a real Spark (pyspark 4, `local[2]`, Python workers in
their own processes): reads against numpy and scipy, partitions that follow tiles and
segments, writes of DAPHNE's segments read back equal and valid, save modes, failures and a
killed job that leave nothing."""

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


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    # Spark's Python workers run this interpreter, which has dbdf installed.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    dbdf.spark.register(session)
    yield session
    session.stop()


def _sorted(df, by):
    return df.orderBy(by).toPandas()


def test_a_dense_matrix_reads_as_columns_partitioned_by_its_tiles(tmp_path, spark):
    m = np.random.default_rng(3).random((1000, 12))
    path = str(tmp_path / "m.dbdf")
    dbdf.save(path, m, tile=(300, 5))
    df = spark.read.format("dbdf").option("rowIndex", "i").load(path)
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
    rows = _sorted(spark.read.format("dbdf").option("layout", "array")
                   .option("rowIndex", "i").load(dense), "i")
    np.testing.assert_array_equal(np.stack(rows["values"].to_list()), m)
    picked = spark.read.format("dbdf").option("columns", "c3,1").load(dense)
    assert picked.columns == ["c3", "c1"]
    np.testing.assert_array_equal(picked.toPandas().to_numpy(), m[:, [3, 1]])

    csr = sp.random(300, 200, density=0.05, format="csr", random_state=4, dtype=np.float32)
    path = str(tmp_path / "s.dbdf")
    dbdf.save(path, csr, tile=(100, 200))
    triples = spark.read.format("dbdf").option("layout", "triples").load(path)
    assert triples.dtypes == [("row", "bigint"), ("col", "bigint"), ("value", "float")]
    got = triples.toPandas()
    back = sp.coo_array((got["value"], (got["row"], got["col"])), shape=csr.shape)
    assert (back.tocsr() != csr).nnz == 0 and len(got) == csr.nnz
    with pytest.raises(Exception, match="no column 'c9'"):
        spark.read.format("dbdf").option("columns", "c9").load(dense).collect()


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
    df = spark.read.format("dbdf").load(path)
    assert df.dtypes == [("u8", "smallint"), ("u32", "bigint"), ("u64", "decimal(20,0)"),
                         ("i8", "tinyint"), ("i32", "int"), ("i64", "bigint"),
                         ("f32", "float"), ("f64", "double")]
    got = df.toPandas()
    for label, values in frame.items():
        np.testing.assert_array_equal(np.array([int(v) if label == "u64" else v
                                                for v in got[label]]).astype(values.dtype),
                                      values, err_msg=label)
    # Only the chosen columns.
    assert spark.read.format("dbdf").option("columns", "f64,u8").load(path).columns == [
        "f64", "u8"]
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
    # Read by Spark: a partition per segment.
    again = spark.read.format("dbdf").load(out)
    assert again.rdd.getNumPartitions() == 2
    assert again.agg(F.sum("x")).first()[0] == pytest.approx(want.sum() * 0.5)


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
    # Spark itself refuses the mode for Python sources: dbdf.spark.save gives it.
    with pytest.raises(Exception, match="ErrorIfExists"):
        df.write.format("dbdf").save(out)
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


def test_a_changed_file_is_refused_by_a_planned_read(tmp_path, spark):
    path = str(tmp_path / "c.dbdf")
    dbdf.save(path, np.ones((10, 2)))
    df = spark.read.format("dbdf").load(path)
    time.sleep(0.01)
    dbdf.save(path, np.zeros((12, 2)))
    with pytest.raises(Exception, match="changed after the read was planned"):
        df.collect()


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
