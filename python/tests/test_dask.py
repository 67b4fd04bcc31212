"""Dask over `.dbdf` files, on real worker processes (`LocalCluster(processes=True)`):
`to_dask` against numpy and scipy on the whole matrix, what a task carries, stale graphs
refused, and `store`'s lock-free writes (tiled files and DAPHNE's segments) against the
array, with failures that leave nothing."""

import os
import pickle
import threading
import time

import numpy as np
import pytest

import dbdf

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("dask.distributed")
pd = pytest.importorskip("pandas")
sp = pytest.importorskip("scipy.sparse")


def test_dense_tiles_are_chunks_and_sums_are_numpys(tmp_path, client):
    m = np.random.default_rng(1).random((1000, 700))
    path = tmp_path / "t.dbdf"
    dbdf.save(path, m, tile=(256, 300))
    x = dbdf.to_dask(path)
    assert x.chunks == ((256, 256, 256, 232), (300, 300, 100))
    assert x.dtype == np.float64 and type(x._meta) is np.ndarray
    assert x.sum().compute() == pytest.approx(m.sum(), rel=1e-12)
    np.testing.assert_allclose(x.mean(axis=0).compute(), m.mean(axis=0), rtol=1e-12)
    np.testing.assert_array_equal(x[300:700:3, 10:650].compute(), m[300:700:3, 10:650])
    # Every task carries names and numbers, never an open file.
    for key, task in dict(x.dask).items():
        assert len(pickle.dumps(task)) < 1024, key
    # The lazy handle gives the same array.
    with dbdf.open(path) as f:
        assert f[0].to_dask().name == x.name


def test_untiled_objects_are_row_bands(tmp_path, client):
    m = np.arange(3000 * 8, dtype=np.int32).reshape(3000, 8)
    path = tmp_path / "u.dbdf"
    dbdf.save(path, [np.zeros((2, 2)), m])
    x = dbdf.to_dask(path, 1, chunks=(1000, 8))
    assert x.chunks == ((1000, 1000, 1000), (8,))
    np.testing.assert_array_equal(x.compute(), m)
    assert dbdf.to_dask(path, 1).chunks == ((3000,), (8,))


def test_a_changed_file_is_not_served_from_a_stale_graph(tmp_path, client):
    path = tmp_path / "c.dbdf"
    dbdf.save(path, np.ones((100, 10)), tile=(50, 10))
    x = dbdf.to_dask(path)
    assert x.sum().compute() == 1000
    st = os.stat(path)
    dbdf.save(path, np.full((100, 10), 2.0), tile=(50, 10))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    y = dbdf.to_dask(path)
    assert y.name != x.name
    assert y.sum().compute() == 2000
    with pytest.raises(OSError, match="changed after the read was planned"):
        x.sum().compute()


def test_csr_chunks_are_csr_arrays_and_sums_are_scipys(tmp_path, client):
    s = sp.random(2000, 1500, density=0.01, format="csr", random_state=2)
    path = tmp_path / "s.dbdf"
    dbdf.save(path, s, tile=(500, 500))
    y = dbdf.open(path)[0].to_dask()
    assert isinstance(y._meta, sp.csr_array)
    assert y.chunks == ((500,) * 4, (500,) * 3)
    np.testing.assert_allclose(
        np.asarray(y.sum(axis=0).compute()).ravel(), np.asarray(s.sum(axis=0)).ravel()
    )
    np.testing.assert_allclose(
        np.asarray(y.sum(axis=1).compute()).ravel(), np.asarray(s.sum(axis=1)).ravel()
    )
    assert y.sum().compute() == pytest.approx(s.sum())
    block = y.blocks[1, 2].compute()
    assert isinstance(block, sp.csr_array)
    assert (block != s[500:1000, 1000:1500]).nnz == 0


def test_frames_are_data_frames(tmp_path, client):
    frame = pd.DataFrame(
        {"a": np.arange(5000.0), "b": np.arange(5000, dtype=np.int32), "c": np.ones(5000, np.uint8)}
    )
    path = tmp_path / "f.dbdf"
    dbdf.save(path, frame)
    df = dbdf.to_dask(path, chunks=1024)
    assert df.npartitions == 5 and df.divisions == (0, 1024, 2048, 3072, 4096, 4999)
    back = df.compute()
    pd.testing.assert_frame_equal(back, frame)
    assert df["a"].sum().compute() == frame["a"].sum()
    # Columns picked: only they are read, on the workers, and the lazy handle's view agrees.
    picked = dbdf.to_dask(path, chunks=1024, columns=["c", 0])
    pd.testing.assert_frame_equal(picked.compute(), frame[["c", "a"]])
    with dbdf.open(path, columns=["b"]) as f:
        pd.testing.assert_frame_equal(f[0].to_dask(chunks=1024).compute(), frame[["b"]])
    with pytest.raises(dbdf.DbdfError, match="no column"):
        dbdf.to_dask(path, columns=["z"])


def test_segments_are_chunks(tmp_path, client, cli):
    m = np.arange(70.0).reshape(10, 7)
    np.save(tmp_path / "m.npy", m)
    cli("convert", tmp_path / "m.npy", tmp_path / "m.dbdf.hdfs", "--segments", "3")
    x = dbdf.to_dask(tmp_path / "m.dbdf.hdfs")
    assert x.chunks == ((4, 3, 3), (7,))
    np.testing.assert_array_equal(x.compute(), m)
    np.testing.assert_array_equal(x[2:9].compute(), m[2:9])


def test_store_writes_tiles_from_every_worker(tmp_path, client, cli):
    z = da.random.random((1000, 900), chunks=(300, 400))
    expected = z.compute()
    target = tmp_path / "z.dbdf"
    dbdf.store(z, target)
    back = dbdf.load(target)
    np.testing.assert_array_equal(back, expected)
    with dbdf.open(target) as f:
        assert [(b["row"], b["col"], tuple(b["shape"])) for b in f[0].blocks][:4] == [
            (0, 0, (300, 400)),
            (0, 400, (300, 400)),
            (0, 800, (300, 100)),
            (300, 0, (300, 400)),
        ]
    cli("validate", target)
    # The same bytes as the one-process writer's for these tiles.
    dbdf.save(tmp_path / "same.dbdf", expected, tile=(300, 400), block="dense")
    assert target.read_bytes() == (tmp_path / "same.dbdf").read_bytes()
    # Other tiles than the chunks, and other types.
    ints = da.arange(0, 5000, chunks=700, dtype=np.int16).reshape(100, 50)
    dbdf.store(ints, tmp_path / "i.dbdf", tile=(32, 64))
    np.testing.assert_array_equal(dbdf.load(tmp_path / "i.dbdf"), ints.compute())
    assert sorted(os.listdir(tmp_path)) == ["i.dbdf", "same.dbdf", "z.dbdf"]


def _fail_in_one_chunk(block, block_info=None):
    if block_info[0]["chunk-location"] == (1, 1):
        raise RuntimeError("chunk (1, 1) failed")
    return block


def test_a_failed_store_leaves_nothing(tmp_path, client):
    z = da.ones((600, 600), chunks=(200, 200)).map_blocks(_fail_in_one_chunk, dtype=float)
    for target in (tmp_path / "z.dbdf", tmp_path / "z.dbdf.hdfs"):
        with pytest.raises(RuntimeError, match="chunk"):
            dbdf.store(z, target)
        assert os.listdir(tmp_path) == []
    # An earlier file stays as it was.
    dbdf.save(tmp_path / "z.dbdf", np.zeros((2, 2)))
    before = (tmp_path / "z.dbdf").read_bytes()
    with pytest.raises(RuntimeError):
        dbdf.store(z, tmp_path / "z.dbdf")
    assert (tmp_path / "z.dbdf").read_bytes() == before
    assert os.listdir(tmp_path) == ["z.dbdf"]


def test_a_scratch_folder_is_removed_while_a_late_task_writes_into_it(tmp_path):
    # Regression: a Spark job's abort left its scratch folder when a task still running
    # made a file while the folder was being emptied (a failed job's tasks run on).
    from dbdf import _dbdf

    scratch, _ = map(os.fspath, _dbdf.stage_segments(str(tmp_path / "t.hdfs"), "test"))
    made, stop = [], threading.Event()

    def late_task():
        while not stop.is_set():
            try:
                with open(os.path.join(scratch, f"part-{len(made)}"), "wb") as f:
                    f.write(b"x")
                made.append(1)
            except FileNotFoundError:
                pass

    task = threading.Thread(target=late_task)
    task.start()
    while len(made) < 3000:  # enough files that emptying the folder outlasts a thread switch
        time.sleep(0.001)
    _dbdf.discard_scratch(scratch)
    time.sleep(0.05)
    stop.set()
    task.join()
    assert os.listdir(tmp_path) == []


def test_store_writes_daphne_segments(tmp_path, client, cli):
    z = da.random.random((1000, 90), chunks=(300, 40))
    expected = z.compute()
    target = tmp_path / "z.dbdf.hdfs"
    dbdf.store(z, target)
    names = sorted(os.listdir(target))
    assert names == [f"z.dbdf.hdfs_segment_{i}{m}" for i in range(1, 5) for m in ("", ".meta")]
    assert (target / "z.dbdf.hdfs_segment_4.meta").read_text() == (
        '{"numCols":90,"numRows":100,"valueType":"f64"}'
    )
    assert (tmp_path / "z.dbdf.hdfs.meta").read_text() == (
        '{"hdfs":{"HDFSFilename":"/z.dbdf.hdfs","isHDFS":true},'
        '"numCols":90,"numRows":1000,"valueType":"f64"}'
    )
    for i in range(1, 5):
        cli("validate", target / f"z.dbdf.hdfs_segment_{i}")
    cli("convert", target, tmp_path / "back.npy")
    np.testing.assert_array_equal(np.load(tmp_path / "back.npy"), expected)
    # Written again over the old folder, with other chunks.
    dbdf.store(z.rechunk((500, 90)), target, to_format="segments")
    assert len(os.listdir(target)) == 4
    np.testing.assert_array_equal(dbdf.to_dask(target).compute(), expected)
    assert sorted(os.listdir(tmp_path)) == ["back.npy", "z.dbdf.hdfs", "z.dbdf.hdfs.meta"]
