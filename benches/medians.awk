# Medians (and ranges) of repeated measurements, per name, in the order first measured.
# Input lines: "<name> <seconds> s <MiB> MiB", as the benchmark scripts' `measure` prints them.
{
    name = $0
    sub(/ +[0-9.]+ s +[0-9.]+ MiB$/, "", name)
    n[name]++
    t[name, n[name]] = $(NF - 3)
    m[name, n[name]] = $(NF - 1)
    if (!(name in seen)) { seen[name] = 1; order[++k] = name }
}
END {
    for (i = 1; i <= k; i++) {
        name = order[i]; c = n[name]
        for (a = 1; a <= c; a++) for (b = a + 1; b <= c; b++) if (t[name, b] < t[name, a]) {
            x = t[name, a]; t[name, a] = t[name, b]; t[name, b] = x
            x = m[name, a]; m[name, a] = m[name, b]; m[name, b] = x
        }
        h = int((c + 1) / 2)
        printf "%-40s %8.3f s %9.1f MiB (median of %d: %.3f to %.3f s)\n", name, t[name, h], m[name, h], c, t[name, 1], t[name, c]
    }
}
