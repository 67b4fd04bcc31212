#!/usr/bin/env bash
# Seeds fuzz/corpus/<target> with the golden files and files this crate writes. The
# minimized corpora kept in the repository (fuzz/seeds/<target>) come from these after a
# long run and `cargo fuzz cmin` (see fuzz/README.md).
set -euo pipefail
cd "$(dirname "$0")"
seeds=$(mktemp -d)
cargo run --quiet --manifest-path ../Cargo.toml --example fuzz_seeds -- "$seeds"
for target in object typed roundtrip lazy; do
  mkdir -p "corpus/$target"
  cp "$seeds"/*.dbdf "corpus/$target/"
  cp ../tests/data/daphne-runtime/*.dbdf ../tests/data/daphne-runtime/*.bin "corpus/$target/"
done
mkdir -p corpus/neighbours
cp ../dbdf/tests/data/futhark/*.bin ../dbdf/tests/data/binsparse/*.npz ../dbdf/tests/data/zarr/*.npz \
  corpus/neighbours/
mkdir -p corpus/systemds
for f in ../dbdf/tests/data/systemds/*; do
  case "$(basename "$f")" in *.*) ;; *) cp "$f" corpus/systemds/ ;; esac
done
mkdir -p corpus/tables
cp ../dbdf/tests/data/arrow/*.parquet ../dbdf/tests/data/arrow/*.feather ../dbdf/tests/data/arrow/*.arrow \
  corpus/tables/
mkdir -p corpus/csv
cp ../dbdf/tests/data/systemds/*.csv corpus/csv/
python3 pack_zarr.py corpus/zarr ../dbdf/tests/data/zarr/*.zarr ../dbdf/tests/data/binsparse/*.zarr
rm -rf "$seeds"
echo "seeded: $(ls corpus/object | wc -l) files per .dbdf target, $(ls corpus/zarr | wc -l) Zarr groups"
