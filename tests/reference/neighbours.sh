#!/usr/bin/env bash
# Futhark and Binsparse files written by dbdf, read by the real Python references
# (futhark-data, binsparse from PyPI), and files the references write, read by dbdf.
# Without Python or PyPI it says SKIPPED and exits 0; any mismatch exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/../.."

check=neighbours
. tests/reference/common.sh
# shellcheck disable=SC2086
need_venv $neighbour_packages

# HDF5 files only where the HDF5 library is installed (the hdf5 feature links it).
if pkg-config --exists hdf5 2>/dev/null; then
    cargo build -q -p dbdf --all-features --bin dbdf
    h5=yes
else
    echo "neighbours: no HDF5 library: Binsparse .h5 files are not checked"
    cargo build -q -p dbdf --bin dbdf
    h5=""
fi
dbdf=target/debug/dbdf
dir=target/reference-check
rm -rf "$dir"
mkdir -p "$dir/ours" "$dir/theirs"

golden=tests/data/daphne-runtime
formats="CSR CSC COO COOR COOC DCSR DCSC DMAT DMATR DMATC"
# binsparse 0.1.4 for Python reads only SemVer versions.
python="--binsparse-version 0.1.0"
# A column, for the vector formats.
$dbdf convert --from futhark dbdf/tests/data/futhark/array_f32_1d.bin "$dir/ours/col_f32_5x1.dbdf"
for src in "$golden"/dense_f64_3x4.dbdf "$golden"/dense_f64_neg_3x4.dbdf \
    "$golden"/dense_si32_neg_2x3.dbdf "$golden"/dense_ui8_max_2x3.dbdf \
    "$golden"/dense_f32_neg_3x4.dbdf "$golden"/dense_f64_100x7.dbdf \
    "$golden"/csr_f64_5x6.dbdf "$golden"/csr_si64_5x6.dbdf "$golden"/csr_ui8_5x6.dbdf \
    "$golden"/csr_f32_5x6.dbdf "$dir/ours/col_f32_5x1.dbdf"; do
    out="$dir/ours/$(basename "$src" .dbdf)"
    $dbdf convert "$src" "$out.npy"
    $dbdf convert "$src" "$out.fut"
    extra=""
    case "$src" in *5x1.dbdf) extra="DVEC CVEC" ;; esac
    for format in $formats $extra; do
        $dbdf convert $python --binsparse-format "$format" "$src" "$out.$format.bsp.npz"
        $dbdf convert $python --binsparse-format "$format" "$src" "$out.$format.bsp.zarr"
        if [ -n "$h5" ]; then
            $dbdf convert $python --binsparse-format "$format" --index-type i32 "$src" \
                "$out.$format.bsp.h5"
        fi
    done
    $dbdf convert $python --iso --binsparse-format CSR "$src" "$out.iso.bsp.npz"
    $dbdf convert $python --zarr-format 2 "$src" "$out.zarr2.bsp.zarr"
    # The spec's version string, which the Python reference refuses (checked below).
    $dbdf convert "$src" "$out.spec-version.npz"
done
"$venv/bin/python" tests/reference/neighbours.py check "$dir/ours"

"$venv/bin/python" tests/reference/neighbours.py write "$dir/theirs"
for file in "$dir"/theirs/*.fut "$dir"/theirs/*.bsp.npz "$dir"/theirs/*.bsp.zarr \
    ${h5:+"$dir"/theirs/*.bsp.h5}; do
    $dbdf convert "$file" "$file.dbdf.npy"
done
[ -n "$h5" ] || rm -f "$dir"/theirs/*.bsp.h5.expected.npy
"$venv/bin/python" tests/reference/neighbours.py compare "$dir/theirs"
echo "neighbours: OK"
