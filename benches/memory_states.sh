#!/usr/bin/env bash
# Every path that fills new memory, in two states of memory (issue 48): "clean" (as root:
# caches dropped and memory compacted first; otherwise as found) and "full" (a file of most of
# the machine's memory written and read back first, so the page cache holds it, as on a
# machine that has been running; removed afterwards). Each state runs, in one go:
#   - criterion: dense 4096 x 4096 f64 (from_slice, also in small pages only, to_vec, tiled
#     from_slice, against warm and fresh memcpy and ndarray-npy's read) and the 1e6 x 1e6
#     random CSR with 1e7 non-zeros (from_slice, to_vec, against memcpy);
#   - Python (benches/python_bytes.py, the installed dbdf): loads, dumps, load of a file,
#     against numpy, pickle and scipy.
# Criterion's middle estimate, milliseconds, after 3 s of warm-up: after the caches are
# dropped, memory the host took back is backed again over the first calls of each path; the
# ratios are in each state's own run.
# Then, with the page cache still full, a third state, "idle": the same paths each called
# after --idle seconds asleep (benches/idle.rs, python_bytes.py --idle), so that memory freed
# by the last call has gone back to the host of a virtual machine that takes back free memory.
#
# With --rounds N the clean and full states take N turns (clean, full, clean, full, ...), so that
# a host busier for a while slows both; benches/memory_states_table.py then prints each ratio's
# median over the rounds, and its lowest and highest, against issue 48's targets.
#
# Usage: benches/memory_states.sh [--fill GIB] [--python PYTHON] [--dir DIR] [--idle S]
#                                 [--rounds N]
#   --fill    GiB of page cache for the full state (default: 60% of MemTotal)
#   --python  the Python with dbdf installed (default: python3)
#   --idle    seconds between calls in the idle state (default 3; 0 leaves it out)
#   --rounds  turns of the clean and the full state (default 1)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
python3 "$root/benches/machine.py"  # the CPU model, beside the figures
fill=$(awk '/MemTotal/ { printf "%d", $2 * 0.6 / 1048576 }' /proc/meminfo)
python=python3
dir=${TMPDIR:-/tmp}
idle=3
rounds=1
while [ $# -gt 0 ]; do
    case $1 in
        --fill) fill=$2; shift 2 ;;
        --python) python=$2; shift 2 ;;
        --dir) dir=$2; shift 2 ;;
        --idle) idle=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
filler="$dir/memory-states-filler.$$"
log="$dir/memory-states.$$.log"
trap 'rm -f "$filler" "$log"' EXIT

criterion() {
    # Each benchmark's name, then its time (the middle estimate); change lines (%) skipped.
    (cd "$root" && cargo bench -q --bench "$1" -- "$2" --warm-up-time 3 --measurement-time 4 \
        --noplot 2>/dev/null) | awk '
        /^[a-z_]+\/[^ ]+/ { name = $1 }
        /time:/ && !/%/ {
            gsub(/[\[\]]/, "")
            for (i = 1; i <= NF; i++) if ($i == "time:") { v = $(i + 3); u = $(i + 4) }
            if (u == "s") v *= 1000; if (u == "µs") v /= 1000; if (u == "ns") v /= 1e6
            printf "  %-48s %9.2f ms\n", name, v
        }'
}

state() {
    echo "== $1: page cache $(awk '/^Cached/ { printf "%.1f", $2 / 1048576 }' /proc/meminfo) GiB, free $(awk '/MemFree/ { printf "%.1f", $2 / 1048576 }' /proc/meminfo) GiB"
    criterion dense 'dense/4096x4096/(memcpy/(warm|fresh)|daphne/(from_slice|from_slice_small_pages|to_vec|from_slice_tiled_1000)$|npy/read_npy)'
    criterion csr 'csr_random/spec/(memcpy/(warm|fresh)|daphne/(from_slice|to_vec))$'
    "$python" "$root/benches/python_bytes.py" --runs 7 --dir "$dir" | sed 's/^/  /'
}

(cd "$root" && cargo bench -q --no-run --bench dense --bench csr --bench idle 2>/dev/null)
for round in $(seq "$rounds"); do
    if [ "$(id -u)" = 0 ]; then
        sync
        echo 3 > /proc/sys/vm/drop_caches
        echo 1 > /proc/sys/vm/compact_memory
    fi
    state "clean, round $round"
    dd if=/dev/zero of="$filler" bs=1M count=$((fill * 1024)) status=none
    dd if="$filler" of=/dev/null bs=1M status=none
    state "full, round $round (a ${fill} GiB file written and read back)"
    [ "$round" = "$rounds" ] || rm -f "$filler"
done 2>&1 | tee "$log"
if [ "$idle" != 0 ]; then
    echo "== idle, page cache full: each call after $idle s asleep"
    (cd "$root" && cargo bench -q --bench idle -- --idle "$idle" --runs 5 2>/dev/null) | sed 's/^/  /'
    "$python" "$root/benches/python_bytes.py" --runs 3 --idle "$idle" --dir "$dir" | sed 's/^/  /'
fi
echo
python3 "$root/benches/memory_states_table.py" "$log"
