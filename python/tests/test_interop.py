"""Files written from Python read by the Rust crate's `dbdf` tool, and the reverse."""

import json

import numpy as np
import pytest

import dbdf


def test_python_files_pass_the_crates_strict_validation(tmp_path, cli):
    sparse = pytest.importorskip("scipy.sparse")
    objects = {
        "dense": np.arange(35, dtype=np.int16).reshape(5, 7),
        "tiled": (np.arange(35, dtype=np.float32).reshape(5, 7), {"tile": (2, 3)}),
        "csr": sparse.random_array((40, 30), density=0.1, dtype=np.float64, rng=1),
        "frame": {"a": np.arange(4, dtype=np.uint64), "b": np.linspace(0, 1, 4)},
        "daphne": (np.eye(3), {"dialect": "daphne"}),
    }
    for name, spec in objects.items():
        obj, options = spec if isinstance(spec, tuple) else (spec, {})
        path = tmp_path / f"{name}.dbdf"
        dbdf.save(path, obj, **options)
        assert cli("validate", path).stdout.strip().endswith("ok"), name
        info = json.loads(cli("info", "--json", path).stdout)
        described = info["objects"][0]
        shape = (4, 2) if name == "frame" else np.shape(obj)
        assert (described["rows"], described["cols"]) == shape, name
        assert described["dialect"] == ("daphne" if name == "daphne" else "spec")


def test_python_matrices_convert_to_npy_through_the_cli(tmp_path, cli):
    a = np.random.default_rng(3).standard_normal((33, 21))
    dbdf.save(tmp_path / "a.dbdf", a, tile=(8, 8))
    cli("convert", tmp_path / "a.dbdf", tmp_path / "a.npy")
    assert np.load(tmp_path / "a.npy").tobytes() == a.tobytes()


def test_cli_files_load_in_python(tmp_path, cli):
    a = np.arange(60, dtype=np.uint32).reshape(6, 10)
    np.save(tmp_path / "a.npy", a)
    cli("convert", tmp_path / "a.npy", tmp_path / "a.dbdf", "--tile", "4,4")
    back = dbdf.load(tmp_path / "a.dbdf")
    assert back.dtype == np.uint32
    np.testing.assert_array_equal(back, a)
    cli("convert", tmp_path / "a.npy", tmp_path / "d.dbdf", "--dialect", "daphne")
    assert (tmp_path / "d.dbdf.meta").exists()
    np.testing.assert_array_equal(dbdf.load(tmp_path / "d.dbdf"), a)
    mtx = tmp_path / "m.mtx"
    mtx.write_text("%%MatrixMarket matrix coordinate real general\n3 4 2\n3 4 -1.5\n1 2 2\n")
    cli("convert", mtx, tmp_path / "m.dbdf")
    m = dbdf.load(tmp_path / "m.dbdf")
    assert m.toarray().tolist() == [[0, 2, 0, 0], [0, 0, 0, 0], [0, 0, 0, -1.5]]


def test_cli_slice_and_python_windows_agree(tmp_path, cli):
    a = np.random.default_rng(4).integers(0, 100, size=(40, 30)).astype(np.int64)
    dbdf.save(tmp_path / "a.dbdf", a, tile=(7, 9))
    cli("slice", tmp_path / "a.dbdf", tmp_path / "w.npy", "--rows", "5:33", "--cols", "2:20")
    with dbdf.open(tmp_path / "a.dbdf") as f:
        np.testing.assert_array_equal(np.load(tmp_path / "w.npy"), f[0][5:33, 2:20])
