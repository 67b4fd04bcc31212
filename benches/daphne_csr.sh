#!/usr/bin/env bash
# Runtime-dialect CSR read against DAPHNE's own reader, same file, same machine, same run:
# a 1e6 x 1e6 f64 matrix with 1e7 non-zeros (168 MB). DAPHNE's unmodified readDaphne (from
# ../shared/daphne-reader) and this crate's from_file take turns, TURNS times, each process
# timing N reads in a row (the file stays in the page cache); medians. Peak RSS per process.
#
#   bash benches/daphne_csr.sh [DIR]      (about 3 min; needs g++ and DAPHNE's reader sources)
set -euo pipefail
cd "$(dirname "$0")/.."
python3 benches/machine.py  # the CPU model, beside the figures
DIR="${1:-target/daphne-csr}"
TURNS="${TURNS:-3}"
READER="${READER:-../shared/daphne-reader}"
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd)"
bash "$READER/build.sh" "$DIR/build" >/dev/null
g++ -std=c++20 -O3 -DSPDLOG_FMT_EXTERNAL -w -I"$READER/stubs" -I"$READER/daphne/src" \
    -o "$DIR/daphne-read-timing" benches/daphne/read_timing.cpp \
    $(ls "$DIR"/build/obj/*.o | grep -v driver.o) -lfmt
cargo build --release --quiet --example csr_timing
FILE="$DIR/csr.dbdf"
[[ -f "$FILE" ]] || target/release/examples/csr_timing make "$FILE"
echo "THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo n/a)"
for turn in $(seq "$TURNS"); do
    /usr/bin/time -f "  peak RSS %M KiB" "$DIR/daphne-read-timing" "$FILE" 9
    /usr/bin/time -f "  peak RSS %M KiB" target/release/examples/csr_timing time "$FILE" 9
done
rm -f "$FILE" "$FILE.meta"
