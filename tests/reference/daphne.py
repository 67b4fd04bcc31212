"""Files for DAPHNE, read by DAPHNE's own reader (daphne-read, built from DAPHNE's sources).

Checks, with nothing but the standard library:
1. every golden file DAPHNE wrote reads in DAPHNE exactly as dbdf reads it;
2. runtime-dialect files that dbdf (the CLI) and the library write, dense and CSR of the eight
   value types DAPHNE reads, shapes from 0 x n to several MiB, and frames, read in DAPHNE with
   exactly the values written; CSR files as DaphneDSL types them (the reader's default mode,
   from the sidecar) and dense-looking CSR input written dense;
3. nothing of ours trips AddressSanitizer or UBSan in DAPHNE's code (an instrumented build);
4. the frame-label guard sits exactly at DAPHNE's limit: the longest label we allow reads
   cleanly, one byte more (written past the guard) overflows DAPHNE's heap.

usage: daphne.py DBDF READER ASAN_READER LIBRARY_FILES_DIR OUT_DIR
"""
import json
import math
import os
import random
import struct
import subprocess
import sys

DBDF, READER, ASAN, LIBRARY, OUT = sys.argv[1:6]
failures = []
checked = {"golden": 0, "cli": 0, "library": 0, "asan": 0}
# DaphneDSL's read kernels for .dbdf, as the README states them; daphne-read notes every
# typed read without one ("DaphneDSL has no read kernel for T").
DSL_KERNELS = {"dense-f32", "dense-f64", "dense-si64", "dense-ui8", "csr-f32", "csr-f64"}
seen_types = {}
# Our value type names, DAPHNE's, and a generator of exact values for each.
TYPES = {
    "f64": ("f64", lambda r: r.randint(-4000, 4000) / 8),
    "f32": ("f32", lambda r: r.randint(-4000, 4000) / 4),
    "i64": ("si64", lambda r: r.randint(-(2**63), 2**63 - 1)),
    "i32": ("si32", lambda r: r.randint(-(2**31), 2**31 - 1)),
    "i8": ("si8", lambda r: r.randint(-128, 127)),
    "u64": ("ui64", lambda r: r.randint(0, 2**64 - 1)),
    "u32": ("ui32", lambda r: r.randint(0, 2**32 - 1)),
    "u8": ("ui8", lambda r: r.randint(0, 255)),
}


def fail(message):
    failures.append(message)
    print("daphne: FAIL:", message)


def as_f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def same(a, b, f32=False):
    """Two numbers as text: equal as integers, or as floats bit for bit (NaN, -0). For f32
    values both texts are taken to f32 first: DAPHNE's reader prints f32 widened to double
    (17 digits), ours print the shortest text that reads back to the same f32."""
    if all(ch in "+-0123456789" for ch in a + b):
        return int(a) == int(b)
    x, y = float(a), float(b)
    if f32:
        x, y = as_f32(x), as_f32(y)
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return x == y and math.copysign(1, x) == math.copysign(1, y)


def daphne_read(reader, path, *args):
    run = subprocess.run([reader, path, *args], capture_output=True, text=True)
    return run.returncode, run.stdout, run.stderr


def parse_listing(text):
    """daphne-read's output: (rows, cols, {(i, j): value}, [frame column types])."""
    lines = text.splitlines()
    rows, cols = map(int, lines[0].split())
    cells, types = {}, []
    for line in lines[1:]:
        words = line.split()
        if words[0] == "label":
            types.append(words[2])
        else:
            cells[(int(words[0]), int(words[1]))] = words[2]
    return rows, cols, cells, types


def compare(name, listing, rows, cols, cell_of, f32_col):
    got_rows, got_cols, cells, _ = parse_listing(listing)
    if (got_rows, got_cols) != (rows, cols):
        return fail(f"{name}: DAPHNE read {got_rows} x {got_cols}, expected {rows} x {cols}")
    for i in range(rows):
        for j in range(cols):
            want = cell_of(i, j)
            got = cells.get((i, j), "0")
            if not same(got, want, f32_col(j)):
                return fail(f"{name}: cell ({i}, {j}) is {got} in DAPHNE, {want} written")
    return True


def dsl_types_as_csr(rows, cols, nnz):
    """DaphneDSL's typing of readMatrix from a sidecar with numNonZeros (threshold 0.25)."""
    return rows * cols > 0 and nnz / rows / cols < 0.25


def read_checked(name, path, kind, rows, cols, cell_of, extra=(), vt=None, f32_col=None):
    """Reads `path` with DAPHNE's reader (and its sanitized build) and compares every cell.

    Without `extra` the reader types the read as DaphneDSL does, from the sidecar; a CSR
    file that DaphneDSL would type dense (we warn when writing one) is asked for as CSR."""
    if kind == "csr" and not extra:
        nnz = sum(1 for i in range(rows) for j in range(cols) if not same(cell_of(i, j), "0"))
        if not dsl_types_as_csr(rows, cols, nnz):
            extra = ["--type", f"csr-{vt}"]
    args = ["--all", *extra] if kind != "frame" else list(extra)
    f32_col = f32_col or (lambda j: vt == "f32")
    # The sanitized read runs beside the plain one (each on a core of its own).
    sanitized = subprocess.Popen([ASAN, path, *args], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
    status, out, err = daphne_read(READER, path, *args)
    _, asan_err = sanitized.communicate()
    if status != 0:
        return fail(f"{name}: daphne-read exited {status}: {err.strip()}")
    for line in err.splitlines():
        if ": type from " in line:
            seen_types.setdefault(line.rsplit(": ", 1)[1], "no read kernel" not in err)
    if not compare(name, out, rows, cols, cell_of, f32_col):
        return False
    status, err = sanitized.returncode, asan_err
    if status != 0 or "Sanitizer" in err or "runtime error" in err:
        return fail(f"{name}: the sanitized daphne-read exited {status}: {err.strip()[-400:]}")
    checked["asan"] += 1
    return True


def dbdf(*args):
    return subprocess.run([DBDF, *args], capture_output=True, text=True)


def info(path):
    run = dbdf("info", "--json", path)
    return json.loads(run.stdout)["objects"][0] if run.returncode == 0 else None


def csv_cells(path):
    """Every cell of a file as dbdf reads it: CSV text, and a frame's header dropped."""
    run = dbdf("convert", path, "-", "--to", "csv")
    if run.returncode != 0:
        return None
    return [line.split(",") for line in run.stdout.splitlines()]


# 1. Every golden file DAPHNE wrote, read by DAPHNE and by dbdf alike. (dbdf's reading of
# each is checked against the manifest's values in tests/suite/daphne_runtime.rs, so this
# ties DAPHNE's reader to the manifest too; the manifest's values are prose and formulas in
# places, parsed once there.)
golden = "tests/data/daphne-runtime"
for name in sorted(os.listdir(golden)):
    path = os.path.join(golden, name)
    if not name.endswith(".dbdf") or "_TRUNC" in name or "str" in name:
        continue  # TRUNC: DAPHNE reads u32 block sizes by design; strings: neither reads them
    obj = info(path)
    if obj is None:
        fail(f"{name}: dbdf cannot read it")
        continue
    kind = {"DenseMatrix": "dense", "CSRMatrix": "csr", "Frame": "frame"}[obj["data_type"]]
    extra = []
    if kind != "frame":
        extra = ["--type", f"{kind}-{TYPES[obj['value_types'][0]][0]}"]
        if not os.path.exists(path + ".meta"):
            extra += ["--mode", "direct"]
    elif not os.path.exists(path + ".meta"):
        extra = ["--type", "frame"]
    types = obj["value_types"]
    f32_col = lambda j, types=types: types[min(j, len(types) - 1)] == "f32"
    grid = csv_cells(path)
    if kind == "frame":
        grid = grid[1:]
    rows, cols = obj["rows"], obj["cols"]
    if read_checked(name, path, kind, rows, cols, lambda i, j: grid[i][j], extra,
                    f32_col=f32_col):
        checked["golden"] += 1

# 2a. Files the CLI writes for DAPHNE, from MatrixMarket and CSV text we generate here.
rng = random.Random(20261123)
cli = os.path.join(OUT, "cli")
os.makedirs(cli, exist_ok=True)
shapes = [(0, 4), (4, 0), (1, 9), (9, 1), (17, 13), (600, 900)]
for ours, (theirs, draw) in TYPES.items():
    for rows, cols in shapes:
        if rows * cols > 10000 and ours != "f64":
            continue  # one large file (4.3 MB, several of DAPHNE's 1 MiB chunks) is enough
        for kind in ("dense", "csr"):
            if kind == "csr" and rows * cols == 0:
                continue
            density = 0.08 if kind == "csr" else 0.9
            cells = {}
            for i in range(rows):
                for j in range(cols):
                    if rng.random() < density:
                        value = draw(rng)
                        if value != 0:
                            cells[(i, j)] = value
            stem = f"cli_{kind}_{ours}_{rows}x{cols}"
            mtx = os.path.join(cli, stem + ".mtx")
            field = "real" if ours.startswith("f") else "integer"
            with open(mtx, "w") as f:
                f.write(f"%%MatrixMarket matrix coordinate {field} general\n")
                f.write(f"{rows} {cols} {len(cells)}\n")
                for (i, j), v in cells.items():
                    f.write(f"{i + 1} {j + 1} {v}\n")
            out = os.path.join(cli, stem + ".dbdf")
            run = dbdf("convert", mtx, out, "--dialect", "daphne", "--value-type", ours,
                       "--data-type", kind)
            if run.returncode != 0:
                fail(f"{stem}: dbdf convert failed: {run.stderr.strip()}")
                continue
            # DaphneDSL-style typing from the sidecar (the reader's default): CSR files are
            # asked for as CSR, since their sidecars name their non-zeros.
            cell = lambda i, j, cells=cells: str(cells.get((i, j), 0))
            if read_checked(stem, out, kind, rows, cols, cell, vt=theirs):
                checked["cli"] += 1
# Dense-looking coordinate input without --data-type: written dense, read as DaphneDSL asks.
mtx = os.path.join(cli, "cli_denseish.mtx")
with open(mtx, "w") as f:
    f.write("%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1.5\n1 2 2\n2 2 -3\n")
out = os.path.join(cli, "cli_denseish.dbdf")
dbdf("convert", mtx, out, "--dialect", "daphne")
table = {(0, 0): "1.5", (0, 1): "2", (1, 1): "-3"}
if read_checked("cli_denseish", out, "dense", 2, 2, lambda i, j: table.get((i, j), "0")):
    checked["cli"] += 1
# Stored zeros (issue 35): the representation chosen and the sidecar's numNonZeros count
# the same stored entries, so DaphneDSL's typing from the sidecar matches the file. Three
# entries of a 3 x 3 (0.0, 2.0, -0.0: density 0.33) make a dense file; two of a 4 x 4
# (0.0, 2.0: 0.125) stay CSR, with their explicit zero.
for stem, n, entries, kind in [
    ("cli_stored_zeros_dense", 3, [(1, 1, "0.0"), (2, 2, "2.0"), (3, 3, "-0.0")], "dense"),
    ("cli_stored_zeros_csr", 4, [(1, 1, "0.0"), (2, 2, "2.0")], "csr"),
]:
    mtx = os.path.join(cli, stem + ".mtx")
    with open(mtx, "w") as f:
        f.write(f"%%MatrixMarket matrix coordinate real general\n{n} {n} {len(entries)}\n")
        f.writelines(f"{i} {j} {v}\n" for i, j, v in entries)
    out = os.path.join(cli, stem + ".dbdf")
    run = dbdf("convert", mtx, out, "--dialect", "daphne")
    if run.returncode != 0:
        fail(f"{stem}: dbdf convert failed: {run.stderr.strip()}")
        continue
    written = (info(out) or {}).get("data_type")
    if written != {"dense": "DenseMatrix", "csr": "CSRMatrix"}[kind]:
        fail(f"{stem}: expected a {kind} file, dbdf info says {written}")
    table = {(i - 1, j - 1): v for i, j, v in entries}
    if read_checked(stem, out, kind, n, n, lambda i, j: table.get((i, j), "0"), vt="f64"):
        checked["cli"] += 1
# Frames of all eight types, from CSV and a sidecar that types the columns.
for rows in (0, 1, 25):
    columns = list(TYPES.items())
    values = [[draw(rng) for _ in range(rows)] for _, (_, draw) in columns]
    stem = f"cli_frame_{rows}x8"
    csv = os.path.join(cli, stem + ".csv")
    with open(csv, "w") as f:
        f.write(",".join(ours for ours, _ in columns) + "\n")
        for i in range(rows):
            f.write(",".join(str(values[c][i]) for c in range(len(columns))) + "\n")
    schema = [{"label": ours, "valueType": theirs} for ours, (theirs, _) in columns]
    with open(csv + ".meta", "w") as f:
        json.dump({"numCols": 8, "numRows": rows, "schema": schema}, f)
    out = os.path.join(cli, stem + ".dbdf")
    run = dbdf("convert", csv, out, "--dialect", "daphne")
    if run.returncode != 0:
        fail(f"{stem}: dbdf convert failed: {run.stderr.strip()}")
        continue
    f32_col = lambda j: columns[j][0] == "f32"
    if read_checked(stem, out, "frame", rows, 8, lambda i, j: str(values[j][i]), f32_col=f32_col):
        checked["cli"] += 1

# 2b. Files the library writes (examples/daphne_files.rs), with the values it wrote.
for name in sorted(os.listdir(LIBRARY)):
    if not name.endswith(".expected.json"):
        continue
    stem = name[: -len(".expected.json")]
    with open(os.path.join(LIBRARY, name)) as f:
        want = json.load(f)
    rows, cols, cells = want["rows"], want["cols"], want["cells"]
    if want["kind"] == "frame":
        cell = lambda i, j: cells[j * rows + i]
    else:
        cell = lambda i, j: cells[i * cols + j]
    vt = TYPES.get(stem.split("_")[2], (None,))[0]
    # Library frames hold columns of the eight types in TYPES' order (see the example).
    frame_f32 = lambda j: want["kind"] == "frame" and j == 1
    if read_checked(stem, os.path.join(LIBRARY, stem + ".dbdf"), want["kind"], rows, cols, cell,
                    vt=vt, f32_col=(lambda j: vt == "f32" or frame_f32(j))):
        checked["library"] += 1

# 4. The label guard at DAPHNE's exact limit (32 bytes x columns from the label to the last).
guard = os.path.join(OUT, "guard")
os.makedirs(guard, exist_ok=True)
for length, allowed in ((64, True), (65, False)):
    csv = os.path.join(guard, f"label{length}.csv")
    with open(csv, "w") as f:
        f.write("x" * length + ",b\n1,2\n3,4\n")
    out = os.path.join(guard, f"label{length}.dbdf")
    run = dbdf("convert", csv, out, "--dialect", "daphne")
    if (run.returncode == 0) != allowed:
        fail(f"a {length}-byte label in column 0 of 2: dbdf exited {run.returncode}")
        continue
    if not allowed:
        if "label of frame column 0" not in run.stderr:
            fail(f"the refusal does not name the column: {run.stderr.strip()}")
        dbdf("convert", csv, out, "--dialect", "daphne", "--unguarded-labels")
    status, _, err = daphne_read(ASAN, out)
    overflowed = status != 0 and "heap-buffer-overflow" in err
    if overflowed == allowed:
        fail(f"a {length}-byte label: DAPHNE's sanitized reader exited {status}"
             f" ({'overflow' if overflowed else 'no overflow'}): {err.strip()[-300:]}")

matrix_types = {t: k for t, k in seen_types.items() if t.startswith(("dense-", "csr-"))}
with_kernel = {t for t, has in matrix_types.items() if has}
if with_kernel != DSL_KERNELS & set(matrix_types):
    fail(f"DaphneDSL read kernels {sorted(with_kernel)}, the README says {sorted(DSL_KERNELS)}")
if len(matrix_types) < 16:
    fail(f"only {len(matrix_types)} of the 16 matrix types were read as DaphneDSL types them")

print(f"daphne: golden files {checked['golden']}, CLI files {checked['cli']}, library files "
      f"{checked['library']} read by DAPHNE with the values written; {checked['asan']} "
      f"sanitized reads clean; label guard at DAPHNE's limit")
print(f"{sum(checked[k] for k in ('golden', 'cli', 'library'))} passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
