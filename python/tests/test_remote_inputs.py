"""Every format's input in object storage (moto's S3 server) behind a proxy that fails every
other request with a 503, stops, or sees the object replaced on cue (remote_servers.py): each reads to
the values of its local copy, or fails with one line naming the URL and leaves nothing
(issue 83, item 5)."""

import sys
import threading
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from remote_servers import Proxy, matrix  # noqa: E402

# Each input: its object's name, the tool's arguments making it from `m.npy` (or None: made
# by numpy or scipy themselves), and its sidecars, uploaded beside it.
INPUTS = {
    "dbdf": ("m.dbdf", ["--tile", "128,128"], []),
    "dbdf, DAPHNE's dialect": ("d.dbdf", ["--dialect", "daphne"], [".meta"]),
    "npy": ("m.npy", None, []),
    "csv": ("m.csv", [], [".meta"]),
    "mtx array": ("a.mtx", [], []),
    "mtx coordinate": ("c.mtx", ["--data-type", "csr"], []),
    "parquet": ("m.parquet", [], []),
    "arrow": ("m.arrow", [], []),
    "futhark": ("m.fut", [], []),
    "binsparse npz": ("b.npz", [], []),
    "numpy npz": ("n.npz", None, []),
    "scipy npz": ("s.npz", None, []),
    "systemds": ("m.sysds", ["--to", "systemds", "--systemds-block-size", "100"], [".mtd"]),
    "systemds parts": ("p.sysds", ["--to", "systemds", "--systemds-block-size", "100",
                                   "--parts", "3"], [".mtd"]),
    "binsparse zarr": ("g.zarr", ["--data-type", "csr"], []),
    "binsparse hdf5": ("h.h5", ["--data-type", "csr"], []),
}


def make(tool, folder, name, args, m):
    """Writes `m` as the input `name` in `folder` (with its sidecars)."""
    path = folder / name
    folder.mkdir(exist_ok=True)
    np.save(folder / "source.npy", m)
    if name.endswith(".npy"):
        np.save(path, m)
    elif name == "n.npz":
        np.savez(path, m=m)
    elif name == "s.npz":
        sparse = pytest.importorskip("scipy.sparse")
        sparse.save_npz(path, sparse.csr_matrix(m))
    else:
        done = tool("convert", *args, folder / "source.npy", path, check=False)
        if "this build has no HDF5" in done.stderr:
            pytest.skip("the dbdf tool was built without HDF5 (cargo feature hdf5)")
        assert done.returncode == 0, done.stderr
    return path


@pytest.fixture(scope="module")
def inputs(s3, tool, tmp_path_factory):
    """Every input, two versions of each (the second replaces the first in the replacement
    test): their folders and the matrices they hold."""
    root = tmp_path_factory.mktemp("inputs")
    # Sparse enough for every format's sparse side, large enough for many requests.
    m = np.where(matrix(1024, 512) > 0.8, matrix(1024, 512), 0.0)
    return {"old": (root / "old", m), "new": (root / "new", m + 1.0)}


def upload(s3, folder, name, sidecars):
    """Puts the input `name` and its sidecars in the bucket: a folder as the objects under
    the prefix `name/`, small files (metadata) first, as a writer replacing it would."""
    for suffix in ["", *sidecars]:
        path = folder / (name + suffix)
        if path.is_dir():
            files = sorted((f for f in path.rglob("*") if f.is_file()),
                           key=lambda f: f.stat().st_size)
            keys = [(f"{name}{suffix}/{f.relative_to(path).as_posix()}", f) for f in files]
        else:
            keys = [(name + suffix, path)]
        for key, file in keys:
            s3.client.put_object(Bucket="data", Key=key, Body=file.read_bytes())


def staged(kind, s3, tool, inputs, version="old"):
    """Input `kind` made from the `version` matrix and uploaded: its object's name, the
    matrix and its sidecars' suffixes."""
    name, args, sidecars = INPUTS[kind]
    folder, m = inputs[version]
    make(tool, folder, name, args, m)
    upload(s3, folder, name, sidecars)
    return name, m, sidecars


def run_through(proxy, s3, tool, tmp_path, name):
    """Converts the object `name` to a local `.npy` through `proxy`, with a temporary folder
    of its own: the process's result, the output and that folder."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = s3.env(proxy.endpoint)
    env["TMPDIR"] = str(scratch)
    out = tmp_path / "out.npy"
    done = tool("convert", f"s3://data/{name}", out, env=env, check=False)
    return done, out, scratch


@pytest.mark.parametrize("kind", INPUTS)
def test_a_server_failing_every_other_request_is_retried_to_the_same_values(
        kind, s3, tool, inputs, tmp_path):
    name, m, _ = staged(kind, s3, tool, inputs)
    proxy = Proxy(s3.port, fail_every=2)
    try:
        done, out, scratch = run_through(proxy, s3, tool, tmp_path, name)
        assert done.returncode == 0, done.stderr
        assert np.array_equal(np.load(out), m), kind
        assert proxy.failed >= 1, (kind, proxy.count)
        assert list(scratch.iterdir()) == []
    finally:
        proxy.stop()


@pytest.mark.parametrize("kind", INPUTS)
def test_a_server_gone_mid_read_is_one_line_naming_the_url_and_leaves_nothing(
        kind, s3, tool, inputs, tmp_path):
    name, _, _ = staged(kind, s3, tool, inputs)
    proxy = Proxy(s3.port)
    seen = []

    def stop_at_the_second(method, path):
        seen.append(path)
        if len(seen) == 2:
            # This request gets no answer, nor any after it.
            proxy.stopped = True
            threading.Thread(target=proxy.stop).start()
            raise ConnectionAbortedError("the server went away")

    proxy.on_request = stop_at_the_second
    try:
        done, out, scratch = run_through(proxy, s3, tool, tmp_path, name)
        assert done.returncode == 1, (kind, done.stderr)
        assert done.stderr.count("\n") == 1, done.stderr
        assert f"s3://data/{name}" in done.stderr, done.stderr
        assert not out.exists() and list(scratch.iterdir()) == []
        assert [p.name for p in tmp_path.iterdir()] == ["tmp"]
    finally:
        proxy.stop()


@pytest.mark.parametrize("kind", INPUTS)
def test_an_input_replaced_while_it_is_read_is_never_mixed_with_the_old(
        kind, s3, tool, inputs, tmp_path):
    name, args, sidecars = INPUTS[kind]
    (new, m_new) = inputs["new"]
    make(tool, new, name, args, m_new)
    _, m_old, _ = staged(kind, s3, tool, inputs)
    proxy = Proxy(s3.port)
    seen = []
    replaced = threading.Event()

    def replace_after_the_first(method, path):
        seen.append(path)
        # The data object after the first request: the rest comes from the new version.
        if len(seen) == 2 and not replaced.is_set():
            upload(s3, new, name, sidecars)
            replaced.set()

    proxy.on_request = replace_after_the_first
    try:
        done, out, scratch = run_through(proxy, s3, tool, tmp_path, name)
        if done.returncode == 0:
            # Read whole before the replacement, or whole after it.
            got = np.load(out)
            assert np.array_equal(got, m_old) or np.array_equal(got, m_new), kind
        else:
            assert "replaced while it was read" in done.stderr, (kind, done.stderr)
            assert done.stderr.count("\n") == 1, done.stderr
            assert not out.exists()
        assert list(scratch.iterdir()) == []
    finally:
        proxy.stop()


def test_an_input_nothing_tells_the_format_of_is_refused_without_a_download(s3, tool, tmp_path):
    s3.client.put_object(Bucket="data", Key="untold", Body=b"\x93NUMPY" + bytes(1 << 20))
    proxy = Proxy(s3.port)
    try:
        done, out, scratch = run_through(proxy, s3, tool, tmp_path, "untold")
    finally:
        proxy.stop()
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "s3://data/untold" in done.stderr, done.stderr
    assert "cannot tell the input format" in done.stderr and "--from" in done.stderr
    assert not out.exists() and list(scratch.iterdir()) == []
