"""Property-based round trips over shapes, dtypes, densities, tiles and dialects."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dbdf

DTYPES = ["u1", "u2", "u4", "u8", "i1", "i2", "i4", "i8", "f4", "f8"]


@st.composite
def matrices(draw):
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    shape = draw(st.tuples(st.integers(0, 12), st.integers(0, 12)))
    a = draw(hnp.arrays(dtype, shape))
    density = draw(st.floats(0, 1))
    mask = np.random.default_rng(draw(st.integers(0, 2**32 - 1))).random(shape) < density
    return np.where(mask, a, np.zeros((), dtype)).astype(dtype)


def options(draw_tile, draw_block, draw_narrow):
    return {"tile": draw_tile, "block": draw_block, "narrow": draw_narrow}


@settings(max_examples=300, deadline=None)
@given(
    matrices(),
    st.none() | st.tuples(st.integers(1, 5), st.integers(1, 5)),
    st.sampled_from(["auto", "smallest", "dense", "sparse", "ultra-sparse"]),
    st.booleans(),
)
def test_dense_round_trips_bit_for_bit(a, tile, block, narrow):
    back = dbdf.loads(dbdf.dumps(a, tile=tile, block=block, narrow=narrow))
    assert back.dtype == a.dtype and back.shape == a.shape
    assert back.tobytes() == a.tobytes()


@settings(max_examples=200, deadline=None)
@given(matrices(), st.none() | st.tuples(st.integers(1, 5), st.integers(1, 5)))
def test_sparse_round_trips(a, tile):
    sparse = pytest.importorskip("scipy.sparse")
    m = sparse.csr_array(a)
    back = dbdf.loads(dbdf.dumps(m, tile=tile))
    assert back.dtype == a.dtype and back.shape == a.shape
    # (scipy itself drops -0.0 from a dense input: compare with its matrix, not `a`.)
    assert back.toarray().tobytes() == m.toarray().tobytes()


@settings(max_examples=200, deadline=None)
@given(matrices(), st.data())
def test_windows_equal_numpy_slices(a, data):
    rows, cols = a.shape
    r0 = data.draw(st.integers(0, rows))
    r1 = data.draw(st.integers(r0, rows))
    c0 = data.draw(st.integers(0, cols))
    c1 = data.draw(st.integers(c0, cols))
    tile = data.draw(st.tuples(st.integers(1, 4), st.integers(1, 4)))
    handle = dbdf._dbdf.open_bytes(dbdf.dumps(a, tile=tile), None, None)
    window = dbdf.File(handle)[0][r0:r1, c0:c1]
    assert window.tobytes() == a[r0:r1, c0:c1].tobytes()
