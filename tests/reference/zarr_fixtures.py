"""Writes the Zarr fixtures in dbdf/tests/data/zarr/ with zarr-python (run once; the files are
kept in the repository, so the tests need no Python).

    python zarr_fixtures.py v3 DIR   # with zarr==3.1.6 (and numcodecs) installed
    python zarr_fixtures.py v2 DIR   # with zarr<3 (2.18) installed

Every group holds a matrix whose twin, an `.npz` written by numpy in the layout of the
Binsparse Python reference, holds the same arrays; MANIFEST.json says which. Chunks of 4
elements make every array several chunks, the last one padded.
"""

import json
import os
import sys

import numpy as np

rng = np.random.default_rng(20261124)
DENSE = np.where(rng.random((9, 7)) < 0.35, rng.standard_normal((9, 7)), 0.0)
DENSE[3:6, :] = 0.0  # rows of zeros: a DMAT chunk of zeros that zarr leaves unwritten
ROWS, COLS = np.nonzero(DENSE)
CSR = {
    "pointers_to_1": np.concatenate([[0], np.cumsum(np.bincount(ROWS, minlength=9))]).astype(np.int64),
    "indices_1": COLS.astype(np.int64),
    "values": DENSE[ROWS, COLS],
}
DMAT = {"values": DENSE.reshape(-1)}


def descriptor(fmt, arrays):
    return {
        "binsparse": {
            "version": "0.1.0",
            "format": fmt,
            "shape": [9, 7],
            "number_of_stored_values": int(arrays["values"].size),
            "data_types": {name: str(a.dtype).replace("float", "float") for name, a in arrays.items()},
        }
    }


def twins(directory):
    for fmt, arrays in (("CSR", CSR), ("DMAT", DMAT)):
        text = json.dumps(descriptor(fmt, arrays))
        np.savez(os.path.join(directory, f"{fmt.lower()}.npz"), binsparse=np.array(text), **arrays)


def v3(directory):
    import zarr
    from zarr.codecs import BloscCodec, BytesCodec, Crc32cCodec, GzipCodec, ZstdCodec

    cases = {
        "v3_zstd": {},
        "v3_gzip": {"compressors": GzipCodec(level=5)},
        "v3_blosc_lz4_shuffle": {"compressors": BloscCodec(cname="lz4", shuffle="shuffle")},
        "v3_blosc_zstd_bitshuffle": {"compressors": BloscCodec(cname="zstd", shuffle="bitshuffle")},
        "v3_blosc_blosclz_noshuffle": {"compressors": BloscCodec(cname="blosclz", shuffle="noshuffle")},
        "v3_blosc_zlib": {"compressors": BloscCodec(cname="zlib", shuffle="shuffle")},
        "v3_zstd_crc32c": {"compressors": [ZstdCodec(), Crc32cCodec()]},
        "v3_uncompressed": {"compressors": None},
        "v3_dot_keys": {"chunk_key_encoding": {"name": "default", "separator": "."}},
        "v3_big_endian": {"serializer": BytesCodec(endian="big")},
    }
    manifest = {}
    for name, options in cases.items():
        for fmt, arrays in (("CSR", CSR), ("DMAT", DMAT)):
            if fmt == "DMAT" and name not in ("v3_zstd", "v3_blosc_lz4_shuffle"):
                continue
            group_name = f"{name}_{fmt.lower()}.zarr"
            group = zarr.open_group(os.path.join(directory, group_name), mode="w", zarr_format=3)
            group.attrs["binsparse"] = descriptor(fmt, arrays)
            for array_name, data in arrays.items():
                group.create_array(array_name, data=data, chunks=(4,), **options)
            manifest[group_name] = {"format": fmt, "same_as": f"{fmt.lower()}.npz", "zarr": zarr.__version__}
    twins(directory)
    return manifest


def v2(directory):
    import numcodecs
    import zarr

    cases = {
        "v2_default": {},  # Blosc(lz4, shuffle), zarr 2's default compressor
        "v2_zlib": {"compressor": numcodecs.Zlib(level=3)},
        "v2_gzip": {"compressor": numcodecs.GZip(level=3)},
        "v2_zstd": {"compressor": numcodecs.Zstd(level=1)},
        "v2_big_endian": {"compressor": None, "dtype_order": ">"},
    }
    manifest = {}
    for name, options in cases.items():
        for fmt, arrays in (("CSR", CSR), ("DMAT", DMAT)):
            if fmt == "DMAT" and name != "v2_default":
                continue
            group_name = f"{name}_{fmt.lower()}.zarr"
            group = zarr.open_group(os.path.join(directory, group_name), mode="w")
            group.attrs["binsparse"] = descriptor(fmt, arrays)
            for array_name, data in arrays.items():
                kwargs = dict(options)
                order = kwargs.pop("dtype_order", None)
                if order:
                    data = data.astype(data.dtype.newbyteorder(order))
                group.create_dataset(array_name, data=data, chunks=(4,), **kwargs)
            manifest[group_name] = {"format": fmt, "same_as": f"{fmt.lower()}.npz", "zarr": zarr.__version__}
    return manifest


if __name__ == "__main__":
    which, directory = sys.argv[1], sys.argv[2]
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "MANIFEST.json")
    manifest = json.load(open(path)) if os.path.exists(path) else {"groups": {}}
    manifest["groups"].update({"v3": v3, "v2": v2}[which](directory))
    with open(path, "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
