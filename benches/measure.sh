# Sourced by the benchmark scripts: `measure NAME COMMAND...` runs the command (its output
# dropped) and prints NAME, its wall time and its peak resident memory, from /usr/bin/time,
# as benches/medians.awk reads them. Needs $dir, the scripts' scratch directory.
measure() {
    local name=$1; shift
    /usr/bin/time -f "%e %M" -o "$dir/time" "$@" > /dev/null
    read -r secs kib < "$dir/time"
    printf '%-40s %8.3f s %9.1f MiB\n' "$name" "$secs" "$(echo "$kib/1024" | bc -l)"
}
