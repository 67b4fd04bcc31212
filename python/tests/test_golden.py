"""Files written by DAPHNE's own C++ runtime, read with the values of their manifest."""

import json
import math
import re

import numpy as np
import pytest

import dbdf
from conftest import DAPHNE

MANIFEST = json.loads((DAPHNE / "MANIFEST.json").read_text())
DTYPES = {
    "si8": np.int8, "si32": np.int32, "si64": np.int64, "ui8": np.uint8, "ui32": np.uint32,
    "ui64": np.uint64, "f32": np.float32, "f64": np.float64,
}


def literal(text):
    """A manifest value list such as `[[1, -inf], [nan, 0]]`."""
    return eval(text, {"__builtins__": {}}, {"nan": math.nan, "inf": math.inf})


def entries(kind, *, exclude=("TRUNC", "BUG", "GARBAGE", "fixedstr", "multichunk")):
    return [
        e for e in MANIFEST
        if e["object"] == kind and not any(x in e["file"] for x in exclude)
    ]


def same(actual, expected):
    """Equal values, bit for bit (NaN equal to NaN, -0.0 unlike 0.0)."""
    expected = np.asarray(expected, dtype=actual.dtype).reshape(actual.shape)
    assert actual.tobytes() == expected.tobytes(), f"{actual} != {expected}"


@pytest.mark.parametrize("entry", entries("DenseMatrix"), ids=lambda e: e["file"])
def test_dense_matrices(entry):
    m = dbdf.load(DAPHNE / entry["file"])
    rows, cols = map(int, entry["shape"].split("x"))
    assert isinstance(m, np.ndarray) and m.shape == (rows, cols)
    assert m.dtype == DTYPES[entry["vt"]]
    text = DAPHNE / entry["file"].replace(".dbdf", ".values.txt")
    same(m, np.loadtxt(text, ndmin=2) if text.exists() else literal(entry["values"]))


@pytest.mark.parametrize("entry", entries("CSRMatrix"), ids=lambda e: e["file"])
def test_csr_matrices(entry):
    from scipy.sparse import csr_array

    m = dbdf.load(DAPHNE / entry["file"])
    rows, cols = map(int, entry["shape"].split("x"))
    assert isinstance(m, csr_array) and m.shape == (rows, cols)
    assert m.dtype == DTYPES[entry["vt"]]
    nnz = int(re.search(r"nnz=(\d+)", entry["values"]).group(1))
    assert m.nnz == nnz
    dense = re.search(r"dense view: (\[.*?\]\]|\[\])", entry["values"]).group(1)
    same(m.toarray(), literal(dense) if rows else np.zeros((0, cols)))


def test_multichunk_files_follow_their_formulas():
    m = dbdf.load(DAPHNE / "large" / "dense_f64_512x257_multichunk.dbdf")
    r, c = np.indices((512, 257))
    assert m.dtype == np.float64
    np.testing.assert_array_equal(m, r * 257 + c)
    s = dbdf.load(DAPHNE / "large" / "csr_f64_400x400_multichunk.dbdf")
    r, c = np.indices((400, 400))
    expected = np.where((r * 7 + c) % 8 != 0, r * 1000 + c + 0.5, 0)
    assert s.nnz == 140000
    np.testing.assert_array_equal(s.toarray(), expected)


@pytest.mark.parametrize(
    "name,value,dtype",
    [("f64", 3.141592653589793, np.float64), ("si64", -1234567890123, np.int64),
     ("f32", -0.75, np.float32), ("si32", -7, np.int32), ("ui8", 200, np.uint8)],
)
def test_scalars_are_1x1(name, value, dtype):
    m = dbdf.load(DAPHNE / f"scalar_{name}.bin")
    assert m.shape == (1, 1) and m.dtype == dtype and m[0, 0] == value


def parse_columns(text):
    """`label:type=[values] | ...` from the manifest."""
    out = {}
    for part in text.split(" | "):
        head, values = part.split("=", 1)
        label, vt = head.strip().rsplit(":", 1)
        out[label] = (DTYPES[vt], literal(values))
    return out


def test_mixed_frame_with_its_sidecar():
    entry = next(e for e in MANIFEST if e["file"] == "frame_mixed_3x8.dbdf")
    expected = parse_columns(entry["values"].split("): ", 1)[1])
    frame = dbdf.load(DAPHNE / "frame_mixed_3x8.dbdf")
    assert list(frame) == list(expected)
    for label, (dtype, values) in expected.items():
        assert frame[label].dtype == dtype
        same(frame[label], values)


def test_frame_without_sidecar_has_default_labels():
    frame = dbdf.load(DAPHNE / "frame_si32_f32_2x2_defaultlabels.dbdf")
    assert list(frame) == ["col_0", "col_1"]
    same(frame["col_0"], np.array([-1, 2], dtype=np.int32))
    same(frame["col_1"], np.array([1.5, -0.0], dtype=np.float32))


def test_frame_as_pandas():
    pandas = pytest.importorskip("pandas")
    df = dbdf.load(DAPHNE / "frame_mixed_3x8.dbdf", as_pandas=True)
    assert isinstance(df, pandas.DataFrame)
    assert df.shape == (3, 8) and df["id"].tolist() == [1, -2, 9000000000]
    assert df["quantity_total"].dtype == np.uint64


def test_lazy_handle_describes_daphne_files():
    with dbdf.open(DAPHNE / "csr_f64_5x6.dbdf") as f:
        assert len(f) == 1
        obj = f[0]
        assert (obj.data_type, obj.shape, obj.dtype, obj.dialect) == (
            "CSRMatrix", (5, 6), np.float64, "daphne")
        assert obj[3:5, 2:6].toarray().tolist() == [[4.25, -5.5, 0, 6], [0, 0, 0, 7]]
    assert f.closed
    with pytest.raises(ValueError, match="closed"):
        obj.read()
