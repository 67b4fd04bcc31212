"""Outputs written to object storage (moto's S3 server) as streaming uploads (issue 84): the
sink's bytes go up in parts as they are written, with no local copy (the tool runs with
its file size limited far below the output's), and a failed upload leaves the old object
and no pending multipart upload."""

import re
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import dbdf
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from remote_servers import WRITERS, Proxy, keys_of, kill_midway, matrix  # noqa: E402

# A file the tool writes may grow to this, no more (RLIMIT_FSIZE): a local copy of any of
# the outputs below, 20 MiB and more, kills it (SIGXFSZ).
FILE_LIMIT = 4 << 20

# Each output: its object's name, its sidecars and the options, each written as one stream.
# A `.dbdf`'s block index is compared with `dbdf index`'s walk over the local file.
STREAMED = [("n.npy", [], []), ("t.csv", [".meta"], []), ("b.mtx", [], []),
            ("m.dbdf", [".index"], []), ("t.dbdf", [".index"], ["--tile", "500,300"]),
            ("r.dbdf", [".meta"], ["--dialect", "daphne"])]


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """A 20 MiB matrix in a local `.npy` file."""
    path = tmp_path_factory.mktemp("big") / "m.npy"
    np.save(path, matrix(2560, 1024))
    return path


def limited(cli_path, *args, env):
    """Runs the tool with its files limited to FILE_LIMIT bytes."""
    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT, FILE_LIMIT))
    return subprocess.run([cli_path, *map(str, args)], capture_output=True, text=True, env=env,
                          timeout=300, preexec_fn=limit)


def pending_uploads(s3):
    return s3.client.list_multipart_uploads(Bucket="data").get("Uploads", [])


@pytest.mark.parametrize("name,sidecars,args", STREAMED, ids=[s[0] for s in STREAMED])
def test_a_streamed_output_goes_up_in_parts_with_no_local_copy(s3, tool, big, tmp_path, name,
                                                               sidecars, args):
    local = tmp_path / name
    tool("convert", big, local, *args)
    if ".index" in sidecars:
        tool("index", local)
    assert local.stat().st_size > (16 << 20)  # more than one part
    # A `.dbdf`'s sidecars of an earlier write that the new one lacks go.
    stale = sorted({".meta", ".index"} - set(sidecars)) if name.endswith(".dbdf") else []
    for suffix in stale:
        s3.client.put_object(Bucket="data", Key=name + suffix, Body=b"stale")
    proxy = Proxy(s3.port)
    parts = []
    proxy.on_request = lambda method, path: "partNumber=" in path and parts.append(path)
    try:
        done = limited(tool("--version").args[0], "convert", big, f"s3://data/{name}", *args,
                       env=s3.env(proxy.endpoint))
    finally:
        proxy.stop()
    assert done.returncode == 0, done.stderr
    assert s3.get(name) == local.read_bytes()
    for suffix in sidecars:
        assert s3.get(name + suffix) == Path(f"{local}{suffix}").read_bytes()
    for suffix in stale:
        assert name + suffix not in s3.keys()
    # 16 MiB parts, each sent once.
    assert len(parts) == -(-local.stat().st_size // (16 << 20))
    assert pending_uploads(s3) == []


def test_a_small_streamed_output_is_one_request(s3, tool, tmp_path):
    np.save(tmp_path / "s.npy", matrix(64, 32))
    proxy = Proxy(s3.port)
    try:
        tool("convert", tmp_path / "s.npy", "s3://data/s.csv", env=s3.env(proxy.endpoint))
        tool("convert", tmp_path / "s.npy", tmp_path / "s.csv")
    finally:
        proxy.stop()
    assert s3.get("s.csv") == (tmp_path / "s.csv").read_bytes()
    assert s3.get("s.csv.meta") == (tmp_path / "s.csv.meta").read_bytes()


def test_a_daphne_csr_matrix_goes_up_with_its_meta_and_no_local_copy(s3, tool, tmp_path):
    """DAPHNE's CSR layout gives its non-zero count before the arrays: the stream takes a
    pass over its input for the count and one per array (row offsets, column indices,
    values), with no scratch file (its files limited below the arrays' size), and sends it
    with its `.meta`."""
    m = matrix(2560, 1024)
    m[::3] = 0
    np.save(tmp_path / "s.npy", m)
    args = ["--dialect", "daphne", "--data-type", "csr"]
    done = limited(tool("--version").args[0], "convert", tmp_path / "s.npy", "s3://data/c.dbdf",
                   *args, env=s3.env())
    assert done.returncode == 0, done.stderr
    tool("convert", tmp_path / "s.npy", tmp_path / "c.dbdf", *args)
    assert (tmp_path / "c.dbdf").stat().st_size > (16 << 20)  # more than one part
    assert s3.get("c.dbdf") == (tmp_path / "c.dbdf").read_bytes()
    assert s3.get("c.dbdf.meta") == (tmp_path / "c.dbdf.meta").read_bytes()
    assert b'"numNonZeros":%d' % np.count_nonzero(m) in s3.get("c.dbdf.meta")


SAVE = """
import resource, sys
import numpy as np
import dbdf
resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))
m = np.load(sys.argv[1])
dbdf.save(sys.argv[2], m, tile={tile}, dialect="{dialect}", storage_options={options!r})
"""


@pytest.mark.parametrize("tile,dialect,sidecar", [((500, 300), "spec", ".index"),
                                                  (None, "spec", ".index"),
                                                  (None, "daphne", ".meta")])
def test_python_save_to_a_url_streams_with_its_sidecars_and_no_local_copy(
        s3, tool, big, tmp_path, tile, dialect, sidecar):
    """`dbdf.save` to a URL goes up as it is serialized (its files limited below the
    object's size), with the sidecar a local save's readers make; a stale one goes."""
    name = f"py-{dialect}-{tile is not None}.dbdf"
    stale = {".meta", ".index"} - {sidecar}
    for suffix in stale:
        s3.client.put_object(Bucket="data", Key=name + suffix, Body=b"stale")
    script = SAVE.format(limit=FILE_LIMIT, tile=tile, dialect=dialect, options=s3.options())
    done = subprocess.run([sys.executable, "-c", script, big, f"s3://data/{name}"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    local = tmp_path / name
    dbdf.save(local, np.load(big), tile=tile, dialect=dialect)
    if sidecar == ".index":
        tool("index", local)
    assert s3.get(name) == local.read_bytes()
    assert s3.get(name + sidecar) == Path(f"{local}{sidecar}").read_bytes()
    for suffix in stale:
        assert name + suffix not in s3.keys()
    assert pending_uploads(s3) == []


@pytest.mark.parametrize("refused", ["partNumber=2", "uploadId="])
def test_a_refused_part_or_completion_leaves_the_old_object_and_no_pending_upload(
        s3, tool, big, refused):
    s3.client.put_object(Bucket="data", Key="o.npy", Body=b"the old object")
    proxy = Proxy(s3.port)
    # A part, or the completion (the one POST naming the upload).
    proxy.refuse = lambda method, path: 403 if refused in path and (
        refused != "uploadId=" or method == "POST") else None
    try:
        done = tool("convert", big, "s3://data/o.npy", env=s3.env(proxy.endpoint), check=False)
    finally:
        proxy.stop()
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "s3://data/o.npy" in done.stderr, done.stderr
    assert s3.get("o.npy") == b"the old object"
    assert pending_uploads(s3) == []


@pytest.mark.parametrize("name,args", [
    ("g.zarr", ["--data-type", "csr"]),
    ("p.sysds", ["--to", "systemds", "--systemds-block-size", "100", "--parts", "3"]),
])
def test_a_folder_goes_up_as_a_prefix_and_a_smaller_rewrite_leaves_nothing_of_the_old(
        s3, tool, tmp_path, name, args):
    m = np.where(matrix(500, 300) > 0.5, matrix(500, 300), 0.0)
    np.save(tmp_path / "m.npy", m)
    np.save(tmp_path / "small.npy", m[:120, :7])
    under = lambda: sorted(k for k in s3.keys() if k.startswith(name))  # noqa: E731
    for source, expected in [("m.npy", m), ("small.npy", m[:120, :7])]:
        tool("convert", tmp_path / source, f"s3://data/{name}", *args, env=s3.env())
        tool("convert", tmp_path / source, tmp_path / name, *args)
        local = sorted(f"{name}/{p.relative_to(tmp_path / name).as_posix()}"
                       for p in (tmp_path / name).rglob("*") if p.is_file())
        sidecars = [name + ".mtd"] if name.endswith(".sysds") else []
        assert under() == sorted(local + sidecars)
        back = tmp_path / "back.npy"
        tool("convert", f"s3://data/{name}", back, env=s3.env())
        assert np.array_equal(np.load(back), expected)
        back.unlink()
        shutil.rmtree(tmp_path / name)


def test_an_hdf5_file_goes_up_head_last_with_no_local_copy(s3, tool, big, tmp_path):
    """A Binsparse HDF5 file, whose superblock and metadata at its start the HDF5 library
    writes last: its bytes after the first 16 MiB go up as parts 2, 3, ... as they are
    written, part 1 last, with no local copy (the tool's files are limited far below the
    output's 40 MiB); the matrix read back, as from the local file the library writes."""
    local = tmp_path / "h.bsp.h5"
    done = tool("convert", big, local, "--data-type", "csr", check=False)
    if "this build has no HDF5" in done.stderr:
        pytest.skip("the dbdf tool was built without HDF5 (cargo feature hdf5)")
    assert done.returncode == 0, done.stderr
    proxy = Proxy(s3.port)
    parts = []
    proxy.on_request = lambda method, path: "partNumber=" in path and parts.append(path)
    try:
        done = limited(tool("--version").args[0], "convert", big, "s3://data/h.bsp.h5",
                       "--data-type", "csr", env=s3.env(proxy.endpoint))
    finally:
        proxy.stop()
    assert done.returncode == 0, done.stderr
    size = len(s3.get("h.bsp.h5"))
    assert size > local.stat().st_size > (32 << 20)  # a reserve before its data, at most 8 MiB
    assert size < local.stat().st_size + (8 << 20)
    numbers = [int(re.search(r"partNumber=(\d+)", p).group(1)) for p in parts]
    assert numbers[-1] == 1 and sorted(numbers) == list(range(1, len(numbers) + 1)), numbers
    assert len(numbers) == -(-size // (16 << 20))
    assert pending_uploads(s3) == []
    back = tmp_path / "back.npy"
    tool("convert", "s3://data/h.bsp.h5", back, env=s3.env())
    assert np.array_equal(np.load(back), np.load(big))
    tool("convert", local, back)
    assert np.array_equal(np.load(back), np.load(big))
    # Equal values stored once (--iso), decided after chunks of them went up.
    iso = tmp_path / "iso.npy"
    np.save(iso, np.where(np.load(big) > 0.5, 2.0, 0.0))
    tool("convert", iso, "s3://data/i.bsp.h5", "--data-type", "csr", "--iso", env=s3.env())
    tool("convert", "s3://data/i.bsp.h5", back, env=s3.env())
    assert np.array_equal(np.load(back), np.load(iso))


@pytest.mark.parametrize("name,args", [
    ("z.zarr", ["--data-type", "csr"]),
    ("z2.zarr", ["--zarr-format", "2"]),
    ("i.zarr", ["--data-type", "csr", "--iso"]),
    ("s.sysds", ["--to", "systemds", "--parts", "3"]),
    ("one.sysds", ["--to", "systemds"]),
    ("s.hdfs", ["--segments", "3"]),
])
def test_files_go_up_one_by_one_with_no_local_copy(s3, tool, big, tmp_path, name, args):
    """A Zarr group's chunks, SystemDS's part files (or its one file) and `.mtd`, DAPHNE's
    segments, their sidecars and the folder's: each an object as it is written, no file
    written locally (the tool's files are limited far below the output's 20 MiB), the same
    objects as the local output's files."""
    local = tmp_path / name
    if "--iso" in args:
        # One value: the chunks written are read back and replaced by one.
        np.save(tmp_path / "iso.npy", np.where(np.load(big) > 0.5, 2.0, 0.0))
        big = tmp_path / "iso.npy"
    tool("convert", big, local, *args)
    done = limited(tool("--version").args[0], "convert", big, f"s3://data/{name}", *args,
                   env=s3.env())
    assert done.returncode == 0, done.stderr
    files = {name: local} if local.is_file() else {
        f"{name}/{p.relative_to(local).as_posix()}": p for p in local.rglob("*") if p.is_file()}
    for suffix in (".mtd", ".meta"):
        if Path(f"{local}{suffix}").exists():
            files[name + suffix] = Path(f"{local}{suffix}")
    names = (name, name + ".mtd", name + ".meta")
    assert sorted(k for k in s3.keys() if k.split("/")[0] in names) == sorted(files)
    for key, path in files.items():
        assert s3.get(key) == path.read_bytes(), key
    if name.endswith(".hdfs"):
        # Its sidecar is put last, and deleted while a write runs: a folder without it is
        # refused, never read as it may be (segments of two writes).
        back = tmp_path / "back.npy"
        tool("convert", f"s3://data/{name}", back, env=s3.env())
        assert np.array_equal(np.load(back), np.load(big))
        s3.client.delete_object(Bucket="data", Key=name + ".meta")
        done = tool("convert", f"s3://data/{name}", back, env=s3.env(), check=False)
        assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
        assert "being written" in done.stderr


@pytest.mark.parametrize("name,args", [
    ("b.sysds", ["--to", "systemds", "--systemds-block-size", "100", "--parts", "3"]),
    ("b1.sysds", ["--to", "systemds", "--systemds-block-size", "100"]),
])
def test_systemds_blocks_from_a_bucket_read_its_rows_once_in_order(
        s3, tool, big, tmp_path, name, args):
    """From a `.dbdf` in the bucket, a SystemDS output reads the input's rows in order, a
    block row at a time (not one window per block, which would fetch each block row's rows
    again for each of its 11 blocks), with no local copy, and writes the local output's
    bytes."""
    tool("convert", big, tmp_path / "in.dbdf")
    tool("convert", big, "s3://data/in.dbdf", env=s3.env())
    tool("convert", tmp_path / "in.dbdf", tmp_path / name, *args)
    reads = []
    proxy = Proxy(s3.port)
    proxy.on_request = lambda method, path: reads.append(path) if (
        method == "GET" and path.split("?")[0] == "/data/in.dbdf") else None
    try:
        done = limited(tool("--version").args[0], "convert", "s3://data/in.dbdf",
                       f"s3://data/{name}", *args, env=s3.env(proxy.endpoint))
    finally:
        proxy.stop()
    assert done.returncode == 0, done.stderr
    # 20 MiB read ahead in chunks of 8 MiB, and the header: not 26 x 11 windows.
    assert len(reads) <= 6, len(reads)
    local = tmp_path / name
    files = {name: local} if local.is_file() else {
        f"{name}/{p.relative_to(local).as_posix()}": p for p in local.rglob("*") if p.is_file()}
    files[name + ".mtd"] = Path(f"{local}.mtd")
    assert sorted(k for k in s3.keys() if k.split("/")[0] in (name, name + ".mtd")) == \
        sorted(files)
    for key, path in files.items():
        assert s3.get(key) == path.read_bytes(), key


@pytest.mark.parametrize("name,args", [
    ("r.zarr", ["--data-type", "csr"]),
    ("q.sysds", ["--to", "systemds", "--systemds-block-size", "50", "--parts", "3"]),
])
def test_a_reader_during_a_folder_rewrite_sees_the_old_set_the_new_or_an_error(
        s3, tool, tmp_path, name, args):
    old, new = matrix(200, 30), matrix(150, 30) + 1.0
    np.save(tmp_path / "old.npy", old)
    np.save(tmp_path / "new.npy", new)
    tool("convert", tmp_path / "old.npy", f"s3://data/{name}", *args, env=s3.env())
    seen = []

    def read_now(method, path):
        # Before each of the writer's requests reaches the server: a whole read of the set.
        out = tmp_path / f"read{len(seen)}.npy"
        done = tool("convert", f"s3://data/{name}", out, env=s3.env(), check=False)
        if done.returncode == 0:
            got = np.load(out)
            seen.append("old" if np.array_equal(got, old) else
                        "new" if np.array_equal(got, new) else "mixed")
        else:
            assert done.stderr.count("\n") == 1, done.stderr
            seen.append("error")

    proxy = Proxy(s3.port)
    proxy.on_request = read_now
    try:
        tool("convert", tmp_path / "new.npy", f"s3://data/{name}", *args,
             env=s3.env(proxy.endpoint))
    finally:
        proxy.stop()
    read_now(None, None)
    assert "mixed" not in seen, seen
    assert seen[0] == "old" and seen[-1] == "new", seen


def writes_data(output, folder):
    """Whether a request sends the new data of ``output``: the second part of an object, or
    the second object put under its folder (not the copies of the old set put aside)."""
    put = []

    def check(method, path):
        if folder and method == "PUT" and path.startswith(f"/data/k/{folder}/"):
            put.append(path)
        return len(put) == 2 or "partNumber=2" in path
    return check


@pytest.mark.parametrize("output,sidecars,args,folder", WRITERS, ids=[w[0] for w in WRITERS])
def test_a_write_cut_off_or_killed_midway_shows_nothing_new_and_the_next_leaves_no_upload(
        s3, cli, tmp_path, output, sidecars, args, folder):
    """Every format's output, stopped halfway through sending its data: by the server going
    away (one line, exit 1), then by `kill -9`. A single object and its sidecars are the old
    set after each; a folder reads as the old set or an error; the next write leaves no
    pending upload."""
    tool = cli("--version").args[0]
    rng = np.random.default_rng(7)
    # 20 MiB: an object of several parts; a folder's objects are stopped at the second.
    shape = (2560, 1024) if folder is None else (400, 100)
    old, new = rng.random(shape), rng.random(shape)
    np.save(tmp_path / "old.npy", old)
    np.save(tmp_path / "new.npy", new)
    url = f"s3://data/k/{output}"
    names = [f"k/{n}" for n in (output, *sidecars)]
    first = cli("convert", tmp_path / "old.npy", url, *args, env=s3.env(), check=False)
    if "this build has no HDF5" in first.stderr:
        pytest.skip("the dbdf tool was built without HDF5 (cargo feature hdf5)")
    assert first.returncode == 0, first.stderr
    before = keys_of(s3, names, folder and f"k/{folder}")
    command = [tool, "convert", tmp_path / "new.npy", url, *args]
    back = tmp_path / "back.npy"

    def nothing_new():
        if folder is None:
            assert keys_of(s3, names) == before
            return
        # The old set, or an error while the set is incomplete; never new values.
        done = cli("convert", url, back, env=s3.env(), check=False)
        if done.returncode == 0:
            assert np.array_equal(np.load(back), old)
        else:
            assert done.stderr.count("\n") == 1, done.stderr

    proxy = Proxy(s3.port)
    cut = writes_data(output, folder)
    proxy.on_request = lambda method, path: cut(method, path) and setattr(proxy, "stopped", True)
    try:
        # A server that stays away is given up on within 2 s, not the default 15.
        done = subprocess.run([*command, "--storage-option", "retry_timeout=2"],
                              env=s3.env(proxy.endpoint), capture_output=True, text=True,
                              timeout=120)
    finally:
        proxy.stop()
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert url in done.stderr and "panicked" not in done.stderr, done.stderr
    nothing_new()
    kill_midway(command, s3, writes_data(output, folder))
    nothing_new()
    # The next write aborts what the stopped ones left pending, and leaves nothing aside.
    cli("convert", tmp_path / "new.npy", url, *args, env=s3.env())
    pending = s3.client.list_multipart_uploads(Bucket="data", Prefix="k/").get("Uploads", [])
    assert pending == []
    folder = folder and f"k/{folder}"
    litter = [k for k in s3.keys() if k.startswith((f"k/{output}", f".dbdf-uploads/k/{output}"))
              and k not in names and not (folder and k.startswith(folder + "/"))]
    assert litter == []
    cli("convert", url, back, env=s3.env())
    assert np.array_equal(np.load(back), new)
