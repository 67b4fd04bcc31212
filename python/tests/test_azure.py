"""Azure Blob Storage, against Azurite started here (remote_servers.py): every format up and
down through ``az://`` URLs as the local conversion writes it, windows by their blocks,
DAPHNE's segments under their folder, uploads that appear only whole, and
messages that name the URL but never the account key (issue 71)."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import dbdf

sys.path.insert(0, str(Path(__file__).parent))
from remote_servers import kill_midway, matrix, stats  # noqa: E402


# Each output: its name and sidecars (the local conversion writes the same).
OUTPUTS = [
    ("a.dbdf", []),
    ("d.dbdf", ["d.dbdf.meta"]),
    ("a.npy", []),
    ("a.parquet", []),
    ("a.arrow", []),
    ("a.csv", ["a.csv.meta"]),
    ("a.mtx", []),
]


def test_every_format_goes_up_and_comes_back_as_its_local_conversion(azure, tool, tmp_path):
    m = matrix(300, 20)
    np.save(tmp_path / "m.npy", m)
    for name, sidecars in OUTPUTS:
        extra = ["--dialect", "daphne"] if name == "d.dbdf" else []
        tool("convert", tmp_path / "m.npy", f"az://data/{name}", *extra, env=azure.env())
        tool("convert", tmp_path / "m.npy", tmp_path / name, *extra)
        for key in (name, *sidecars):
            assert azure.get(key) == (tmp_path / key).read_bytes(), key
        tool("convert", f"az://data/{name}", tmp_path / "back.npy", env=azure.env())
        assert np.array_equal(np.load(tmp_path / "back.npy"), m), name
    # Every command takes them: info, validate and slice.
    for name in ("a.mtx", "a.parquet", "d.dbdf"):
        info = json.loads(tool("info", "--json", f"az://data/{name}", env=azure.env()).stdout)
        assert (info["objects"][0]["rows"], info["objects"][0]["cols"]) == (300, 20)
        assert tool("validate", f"az://data/{name}", env=azure.env()).stdout == "ok\n"
        tool("slice", f"az://data/{name}", tmp_path / "w.npy", "--rows", "10:20", "--cols",
             "5:7", env=azure.env())
        assert np.array_equal(np.load(tmp_path / "w.npy"), m[10:20, 5:7])
    # Python, with storage options.
    opts = azure.options()
    dbdf.save("az://data/p.dbdf", m, storage_options=opts)
    assert np.array_equal(dbdf.load("az://data/p.dbdf", storage_options=opts), m)
    dbdf.convert("az://data/a.parquet", tmp_path / "p.npy", storage_options=opts)
    assert np.array_equal(np.load(tmp_path / "p.npy"), m)


def test_a_binsparse_hdf5_file_goes_up_its_first_block_last(azure, tool, tmp_path):
    """A Binsparse HDF5 file of several blocks (its first, the superblock and metadata, put
    last) and one of a single blob read back as the matrix written."""
    m = matrix(2560, 1024)
    np.save(tmp_path / "m.npy", m)
    np.save(tmp_path / "s.npy", m[:10])
    for name, source, extra in [("h.bsp.h5", "m.npy", ["--data-type", "csr"]),
                                ("s.bsp.h5", "s.npy", [])]:
        done = tool("convert", tmp_path / source, f"az://data/{name}", *extra, env=azure.env(),
                    check=False)
        if "this build has no HDF5" in done.stderr:
            pytest.skip("the dbdf tool was built without HDF5 (cargo feature hdf5)")
        assert done.returncode == 0, done.stderr
        tool("convert", f"az://data/{name}", tmp_path / "back.npy", env=azure.env())
        assert np.array_equal(np.load(tmp_path / "back.npy"), np.load(tmp_path / source)), name
    assert len(azure.get("h.bsp.h5")) > (32 << 20)


def test_a_window_of_a_tiled_matrix_reads_only_its_blocks(azure, tool, tmp_path):
    m = matrix(1024, 1024)
    opts = azure.options()
    dbdf.save("az://data/w.dbdf", m, tile=(256, 256), storage_options=opts)
    assert {"w.dbdf", "w.dbdf.index"} <= set(azure.keys())
    with dbdf.open("az://data/w.dbdf", storage_options=opts) as f:
        # The index and the first bytes; then a request per tile of the window (2 x 2).
        assert f.requests["requests"] == 2
        assert np.array_equal(f[0][300:700, 10:260], m[300:700, 10:260])
        assert f.requests["requests"] == 2 + 4
    done = tool("--stats", "slice", "az://data/w.dbdf", "--rows", "300:700", "--cols", "10:260",
                tmp_path / "w.npy", env=azure.env())
    assert np.array_equal(np.load(tmp_path / "w.npy"), m[300:700, 10:260])
    assert stats(done.stderr)[0] <= 2 + 4


def test_daphne_segments_are_blobs_under_their_folder(azure, tool, tmp_path):
    m = matrix(100, 6)
    np.save(tmp_path / "m.npy", m)
    tool("convert", tmp_path / "m.npy", "az://data/m.hdfs", "--segments", "3", env=azure.env())
    tool("convert", tmp_path / "m.npy", tmp_path / "m.hdfs", "--segments", "3")
    names = ["m.hdfs.meta"] + [f"m.hdfs/m.hdfs_segment_{i}{x}" for i in (1, 2, 3)
                               for x in ("", ".meta")]
    assert [k for k in azure.keys() if k.startswith("m.hdfs")] == names
    for key in names:
        assert azure.get(key) == (tmp_path / key).read_bytes(), key
    tool("convert", "az://data/m.hdfs", tmp_path / "back.npy", env=azure.env())
    assert np.array_equal(np.load(tmp_path / "back.npy"), m)
    # Written again with fewer segments: the third goes.
    tool("convert", tmp_path / "m.npy", "az://data/m.hdfs", "--segments", "2", env=azure.env())
    assert [k for k in azure.keys() if k.startswith("m.hdfs")] == names[:5]


def test_an_upload_killed_midway_leaves_the_old_blob_whole(azure, tool, tmp_path):
    np.save(tmp_path / "old.npy", matrix(10, 10))
    tool("convert", tmp_path / "old.npy", "az://data/k.npy", env=azure.env())
    old = azure.get("k.npy")
    np.save(tmp_path / "k.npy", matrix(8192, 1024))  # 64 MiB: several blocks
    blocks = []

    def second_block(method, path):
        blocks.extend(["block"] if "comp=block&" in path or path.endswith("comp=block") else [])
        return len(blocks) == 2

    kill_midway([tool("--version").args[0], "convert", tmp_path / "k.npy", "az://data/k.npy"],
                azure, second_block)
    assert azure.get("k.npy") == old


def test_errors_name_the_url_in_one_line_and_never_the_key(azure, tool):
    # A missing blob, then a wrong key (the server refuses every request).
    wrong = azure.KEY[:-8] + "AAAAAAA="
    for key, error in ((None, FileNotFoundError), (wrong, OSError)):
        done = tool("--stats", "info", "az://data/none.dbdf", env=azure.env(key=key), check=False)
        # The stats, then one line naming the URL.
        stats_line, error_line = done.stderr.splitlines()
        assert done.returncode == 1 and "az://data/none.dbdf" in error_line
        assert stats(stats_line)[2] == 0
        with pytest.raises(error, match="none.dbdf") as raised:
            dbdf.open("az://data/none.dbdf", storage_options=azure.options(key=key))
        for text in (done.stderr, done.stdout, str(raised.value)):
            assert azure.KEY[:16] not in text and wrong[:16] not in text
