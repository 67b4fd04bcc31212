"""Packs Zarr groups into the zarr fuzz target's input: for each file, a 1-byte key length,
the key (its path inside the group), a 2-byte little-endian length and the bytes.

    python3 pack_zarr.py OUT_DIR GROUP...
"""

import os
import sys

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
for group in sys.argv[2:]:
    packed = bytearray()
    for root, _, files in sorted(os.walk(group)):
        for name in sorted(files):
            path = os.path.join(root, name)
            key = os.path.relpath(path, group).encode()
            data = open(path, "rb").read()[:65535]
            packed += bytes([len(key)]) + key + len(data).to_bytes(2, "little") + data
    name = os.path.basename(os.path.normpath(group))
    with open(os.path.join(out, name + ".packed"), "wb") as f:
        f.write(packed)
