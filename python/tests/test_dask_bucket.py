"""Dask on a bucket (issue 85): `store` sends a tiled `.dbdf` (one multipart upload) or
DAPHNE's segments (one per segment) to moto's S3 server, their parts sent by real worker
processes (`LocalCluster(processes=True)`), the caller completing them (with the block index,
or the folder's sidecar last) or aborting them; nothing is visible until then."""

import os
import signal

import numpy as np
import pytest

import dbdf

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("dask.distributed")


def pending_uploads(s3, prefix):
    listed = s3.client.list_multipart_uploads(Bucket="data", Prefix=prefix)
    return [u["Key"] for u in listed.get("Uploads", [])]


def test_store_sends_a_tiled_dbdf_from_the_workers_as_one_upload(s3, client):
    x = da.random.RandomState(3).random_sample((2100, 700), chunks=(500, 350))
    m = x.compute()
    # What an earlier object left beside it goes with the new one.
    s3.client.put_object(Bucket="data", Key="stored.dbdf.meta", Body=b"{}")
    s3.client.put_object(Bucket="data", Key="stored.dbdf.index", Body=b"stale")
    dbdf.store(x, "s3://data/stored.dbdf", storage_options=s3.options())
    body = s3.get("stored.dbdf")
    # The library's whole-file writer's bytes for the same tiles; the values numpy's.
    assert body == dbdf.dumps(m, tile=(500, 350), block="dense")
    assert np.array_equal(dbdf.loads(body), m)
    # Parts of whole rows of tiles, at least 5 MiB each but the last: 3 of them.
    head = s3.client.head_object(Bucket="data", Key="stored.dbdf", PartNumber=1)
    assert head["PartsCount"] == 3
    # The first: the header (19 bytes), then 2 rows of 2 tiles, each its head (26) and values.
    assert head["ContentLength"] == 19 + 2 * 2 * 26 + 1000 * 700 * 8
    # The block index came with it (a remote open reads it), the stale .meta went.
    keys = [k for k in s3.keys() if k.startswith("stored.")]
    assert keys == ["stored.dbdf", "stored.dbdf.index"]
    y = dbdf.to_dask("s3://data/stored.dbdf", storage_options=s3.options())
    assert y.chunks == ((500,) * 4 + (100,), (350, 350))
    assert np.array_equal(y.compute(), m)
    assert pending_uploads(s3, "stored.") == []
    assert not [k for k in s3.keys() if k.startswith(".dbdf-uploads/")]


def test_a_large_row_of_tiles_goes_up_as_several_parts_at_once(s3, client):
    x = da.random.RandomState(5).random_sample((4096, 1024), chunks=(2048, 1024))
    m = x.compute()
    dbdf.store(x, "s3://data/wide.dbdf", tile=(4096, 1024), storage_options=s3.options())
    # One row of tiles of 32 MiB: two parts of 16 MiB, sent by its task at once.
    head = s3.client.head_object(Bucket="data", Key="wide.dbdf", PartNumber=1)
    assert head["PartsCount"] == 2
    assert s3.get("wide.dbdf") == dbdf.dumps(m, tile=(4096, 1024), block="dense")


def segment_keys(s3, name):
    return {k for k in s3.keys() if k.startswith(name)}


def test_store_sends_daphne_segments_from_the_workers_over_an_older_folder(s3, client, tmp_path):
    url, name = "s3://data/seg.dbdf.hdfs", "seg.dbdf.hdfs"
    # An older folder of five segments: the two the new one lacks go.
    np.save(tmp_path / "old.npy", np.zeros((10, 3)))
    dbdf.convert(tmp_path / "old.npy", url, segments=5, storage_options=s3.options())
    x = da.random.RandomState(7).random_sample((3000, 700), chunks=(1000, 350))
    m = x.compute()
    dbdf.store(x, url, storage_options=s3.options())
    segments = [f"{name}/{name}_segment_{k}" for k in (1, 2, 3)]
    assert segment_keys(s3, name) == {f"{name}.meta", *segments, *(s + ".meta" for s in segments)}
    # Each segment is DAPHNE's dialect for its rows, as the library's writer writes it.
    assert s3.get(segments[1]) == dbdf.dumps(m[1000:2000], dialect="daphne")
    y = dbdf.to_dask(url, storage_options=s3.options())
    assert y.chunks == ((1000, 1000, 1000), (700,))
    assert np.array_equal(y.compute(), m)
    assert pending_uploads(s3, name) == []
    assert not [k for k in s3.keys() if k.startswith(".dbdf-uploads/")]


def failing_segment(block, block_info=None):
    if block_info[0]["chunk-location"][0] == 2:
        raise RuntimeError("a segment failed")
    return block


def test_a_failed_store_of_segments_leaves_the_old_folder_and_no_pending_upload(
        s3, client, tmp_path):
    url, name = "s3://data/kept.dbdf.hdfs", "kept.dbdf.hdfs"
    np.save(tmp_path / "old.npy", np.arange(12.0).reshape(4, 3))
    dbdf.convert(tmp_path / "old.npy", url, segments=2, storage_options=s3.options())
    before = {k: s3.get(k) for k in segment_keys(s3, name)}
    x = da.ones((3000, 700), chunks=(1000, 700)).map_blocks(failing_segment, dtype=np.float64)
    with pytest.raises(RuntimeError, match="a segment failed"):
        dbdf.store(x, url, storage_options=s3.options())
    assert {k: s3.get(k) for k in segment_keys(s3, name)} == before
    assert pending_uploads(s3, name) == []
    assert not [k for k in s3.keys() if k.startswith(".dbdf-uploads/")]


def failing(block, block_info=None):
    if block_info[0]["chunk-location"][0] == 1:
        raise RuntimeError("a task failed")
    return block


def test_a_failed_store_to_a_bucket_leaves_no_object_and_no_pending_upload(s3, client):
    x = da.ones((2000, 700), chunks=(1000, 700)).map_blocks(failing, dtype=np.float64)
    with pytest.raises(RuntimeError, match="a task failed"):
        dbdf.store(x, "s3://data/failed.dbdf", storage_options=s3.options())
    assert not [k for k in s3.keys() if k.startswith(("failed.", ".dbdf-uploads/"))]
    assert pending_uploads(s3, "failed.") == []


def ran(block):
    raise RuntimeError("a task ran")


@pytest.mark.parametrize("target, why", [
    ("s3://nobucket/x.dbdf", "bucket"),
    ("s3://nobucket/x.dbdf.hdfs", "bucket"),
    # An HTTP server has no multipart uploads to share.
    ("https://user:sekrit@example.invalid/x.dbdf", "no multipart uploads"),
])
def test_bad_targets_are_one_line_naming_the_url_before_any_task(s3, client, target, why):
    x = da.ones((100, 100), chunks=50).map_blocks(ran, dtype=np.float64)
    options = {**s3.options(), "aws_secret_access_key": "sekrit"}
    with pytest.raises(Exception) as raised:
        dbdf.store(x, target, storage_options=options)
    message = str(raised.value)
    assert target.replace("user:sekrit@", "") in message.replace("user:****@", "")
    assert why in message.lower() and "\n" not in message
    assert "sekrit" not in message and "a task ran" not in message


def killing(block, block_info=None):
    if block_info[0]["chunk-location"][0] == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    return block


def test_a_worker_killed_midway_leaves_no_object_and_no_pending_upload(s3):
    """A worker process killed (SIGKILL) while the others send their parts: the computation
    fails, the caller aborts the upload; nothing under the target, nothing pending."""
    import dask

    # Not retried on another worker, so that the kill fails the computation.
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        cluster = distributed.LocalCluster(
            n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0"
        )
        with distributed.Client(cluster):
            x = da.ones((3000, 700), chunks=(1000, 700)).map_blocks(killing, dtype=np.float64)
            with pytest.raises(distributed.KilledWorker):
                dbdf.store(x, "s3://data/killed.dbdf", storage_options=s3.options())
        cluster.close()
    assert not [k for k in s3.keys() if k.startswith(("killed.", ".dbdf-uploads/"))]
    assert pending_uploads(s3, "killed.") == []
