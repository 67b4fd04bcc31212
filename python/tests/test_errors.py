"""Bad input raises typed exceptions with offsets, never crashes the interpreter."""

import numpy as np
import pytest

import dbdf
from conftest import DAPHNE

GOOD = [
    dbdf.dumps(np.arange(24, dtype=np.float64).reshape(4, 6), tile=(3, 4)),
    (DAPHNE / "csr_f64_5x6.dbdf").read_bytes(),
    (DAPHNE / "frame_mixed_3x8.dbdf").read_bytes(),
    dbdf.dumps({"a": np.arange(5, dtype=np.int16), "b": np.ones(5)}, tile=(2, 1)),
]


@pytest.mark.parametrize("data", GOOD, ids=["tiled", "daphne-csr", "daphne-frame", "frame"])
def test_every_truncation_is_a_dbdf_error(data):
    for length in range(len(data)):
        with pytest.raises(dbdf.DbdfError) as e:
            dbdf.loads(data[:length])
        assert e.value.kind, f"truncated at {length}: no kind"
        assert isinstance(e.value, ValueError)


@pytest.mark.parametrize("data", GOOD, ids=["tiled", "daphne-csr", "daphne-frame", "frame"])
def test_bit_flips_load_or_raise_dbdf_error(data):
    rng = np.random.default_rng(7)
    for _ in range(300):
        damaged = bytearray(data)
        at = int(rng.integers(len(data)))
        damaged[at] ^= 1 << int(rng.integers(8))
        try:
            dbdf.loads(bytes(damaged))
        except dbdf.DbdfError:
            pass
        try:
            with dbdf.open(_write(damaged)) as f:
                for obj in f:
                    obj[0:1, 0:1]
        except dbdf.DbdfError:
            pass


def _write(data, _counter=[0]):
    import tempfile, os

    _counter[0] += 1
    path = os.path.join(tempfile.gettempdir(), f"dbdf-flip-{os.getpid()}.dbdf")
    with open(path, "wb") as f:
        f.write(data)
    return path


def test_errors_carry_offset_and_kind():
    data = GOOD[0]
    with pytest.raises(dbdf.DbdfError) as e:
        dbdf.loads(data[:40])
    assert e.value.kind == "UnexpectedEof"
    assert isinstance(e.value.offset, int) and 0 <= e.value.offset <= 40
    assert f"byte {e.value.offset}" in str(e.value)
    bad_version = b"\x02" + data[1:]
    with pytest.raises(dbdf.DbdfError) as e:
        dbdf.loads(bad_version)
    assert (e.value.kind, e.value.offset) == ("UnsupportedVersion", 0)


def test_a_huge_claimed_size_is_refused_before_allocating():
    # A (2^32-1) x (2^32-1) f64 DenseMatrix: a 37-byte file whose one empty block claims
    # every cell (spec header, then a block at (0, 0) of that size, block type 0).
    n = (1 << 32) - 1
    header = bytes([1, 1]) + n.to_bytes(8, "little") * 2 + bytes([10])
    block = (0).to_bytes(8, "little") * 2 + n.to_bytes(4, "little") * 2 + b"\0"
    with dbdf.open(_write(header + block)) as f:
        assert f[0].shape == (n, n)
        assert f[0][:2, :2].tolist() == [[0.0, 0.0], [0.0, 0.0]]
    with pytest.raises(dbdf.DbdfError) as e:
        dbdf.loads(header + block)
    assert e.value.kind == "AllocationLimit"


def test_missing_files_and_bad_options(tmp_path):
    with pytest.raises(FileNotFoundError):
        dbdf.load(tmp_path / "nope.dbdf")
    with pytest.raises(FileNotFoundError):
        dbdf.open(tmp_path / "nope.dbdf")
    with pytest.raises(ValueError, match="dialect"):
        dbdf.dumps(np.ones((1, 1)), dialect="fortran")
    with pytest.raises(ValueError, match="block"):
        dbdf.dumps(np.ones((1, 1)), block="diagonal")
    with pytest.raises(dbdf.DbdfError):
        dbdf.loads(b"")
    with pytest.raises(dbdf.DbdfError) as e:
        dbdf.loads(dbdf.dumps(np.ones((2, 2))), object=3)
    assert "object 3" in str(e.value)


def test_max_alloc_is_the_callers_to_raise(tmp_path):
    a = np.zeros((100, 100))
    data = dbdf.dumps(a)  # one empty block: 100 x 100 cells described in a few bytes
    assert len(data) < 100
    with pytest.raises(dbdf.DbdfError) as e:
        dbdf.loads(data, max_alloc=1000)
    assert e.value.kind == "AllocationLimit"
    assert dbdf.loads(data, max_alloc=80_000).shape == (100, 100)


def test_a_killed_save_leaves_the_old_file_and_nothing_else(tmp_path):
    """dbdf.save killed with SIGKILL mid-write leaves the previous file, and no temporary."""
    import signal
    import subprocess
    import sys
    import time

    path = tmp_path / "m.dbdf"
    old = np.arange(12.0).reshape(3, 4)
    dbdf.save(path, old)
    script = (
        "import numpy as np, dbdf, sys\n"
        "a = np.ones((4096, 4096))\n"
        "print('ready', flush=True)\n"
        "while True:\n"
        "    dbdf.save(sys.argv[1], a)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", script, str(path)], stdout=subprocess.PIPE)
    assert child.stdout.readline().strip() == b"ready"
    time.sleep(0.3)
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.dbdf"]
    back = dbdf.load(path)
    assert back.shape in {(3, 4), (4096, 4096)}
    if back.shape == (3, 4):
        assert (back == old).all()
    else:
        assert (back == 1.0).all()
    # The next save leaves the new file alone beside nothing.
    dbdf.save(path, old)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.dbdf"]


def test_no_secret_of_a_url_reaches_an_exception(tmp_path):
    # Issue 71: a password and a signature in a URL the server never answers.
    url = "http://user:pa55word@127.0.0.1:9/m.dbdf?X-Amz-Signature=deadbeef"
    options = {"max_retries": "0"}
    for call in (lambda: dbdf.load(url, storage_options=options),
                 lambda: dbdf.convert(url, tmp_path / "m.npy", storage_options=options)):
        with pytest.raises(Exception) as raised:
            call()
        text = str(raised.value) + repr(raised.value.args)
        assert "user:****@127.0.0.1:9" in text
        assert "pa55word" not in text and "deadbeef" not in text
