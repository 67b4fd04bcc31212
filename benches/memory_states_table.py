#!/usr/bin/env python3
"""Issue 48's table from the log of `benches/memory_states.sh --rounds N`: each ratio (the
baseline's time over ours, so above 1 is faster) in each round of each state, then its median
over the rounds with the lowest and highest, and the target it is held to. A ratio is taken
within one state of one round, where our path and its baseline ran minutes apart at most.

Usage: python3 benches/memory_states_table.py LOG
"""
import re
import statistics
import sys

# (what, our path, the baseline, target): a number is a floor for the median in both states;
# "clean" asks the full state's median to be at least the clean state's.
RATIOS = [
    ("`from_slice` / warm memcpy", "dense/4096x4096/daphne/from_slice",
     "dense/4096x4096/memcpy/warm", 0.5),
    ("`from_slice` / `read_npy`", "dense/4096x4096/daphne/from_slice",
     "dense/4096x4096/npy/read_npy", 2.5),
    ("`from_slice` in small pages / warm memcpy",
     "dense/4096x4096/daphne/from_slice_small_pages", "dense/4096x4096/memcpy/warm", None),
    ("tiled `from_slice` / warm memcpy", "dense/4096x4096/daphne/from_slice_tiled_1000",
     "dense/4096x4096/memcpy/warm", "clean"),
    ("`to_vec` / fresh memcpy", "dense/4096x4096/daphne/to_vec",
     "dense/4096x4096/memcpy/fresh", None),
    ("CSR `from_slice` / fresh memcpy", "csr_random/spec/daphne/from_slice",
     "csr_random/spec/memcpy/fresh", "clean"),
    ("CSR `to_vec` / fresh memcpy", "csr_random/spec/daphne/to_vec",
     "csr_random/spec/memcpy/fresh", None),
    ("Python `loads` / `np.load(BytesIO)`", "dense dbdf.loads", "dense np.load(BytesIO)", 1.0),
    ("Python `dumps` / `pickle.dumps(5)`", "dense dbdf.dumps", "dense pickle.dumps(5)", 1.0),
    ("Python `load` / `np.load` (files)", "dense dbdf.load(file)", "dense np.load(file)", None),
    ("Python CSR `loads` / `load_npz(BytesIO)`", "csr dbdf.loads", "csr load_npz(BytesIO)", 2.0),
    ("Python CSR `dumps` / `pickle.dumps(5)`", "csr dbdf.dumps", "csr pickle.dumps(5)", None),
    ("Python frame `loads` / `pickle.loads`", "frame dbdf.loads", "frame pickle.loads", None),
    ("Python frame `dumps` / `pickle.dumps(5)`", "frame dbdf.dumps", "frame pickle.dumps(5)",
     None),
]
# Our times shown beside the ratios.
TIMES = ["dense/4096x4096/daphne/from_slice", "dense/4096x4096/daphne/to_vec",
         "dense/4096x4096/memcpy/warm", "csr_random/spec/daphne/from_slice",
         "dense dbdf.loads", "dense dbdf.dumps", "csr dbdf.loads"]
SECTIONS = {"4096": "dense", "CSR": "csr", "frame": "frame"}


def rounds(lines):
    """Each state's rounds, in order: {"clean": [{path: ms}], "full": [...]}."""
    states, current, section = {}, None, None
    for line in lines:
        if line.startswith("== "):
            name = re.match(r"== (\w+)", line).group(1)
            current = {} if name in ("clean", "full") else None
            if current is not None:
                states.setdefault(name, []).append(current)
            continue
        if current is None:
            continue
        timed = re.match(r"\s+(\S+)\s+([\d.]+) ms\s*$", line)
        if line.startswith("  ") and not line.startswith("   ") and not timed:
            section = SECTIONS.get(line.split()[0])
        elif timed:
            path, ms = timed.groups()
            key = path if path.count("/") > 1 else f"{section} {path}"
            current[key] = float(ms)
    return states


def spread(values):
    return f"{statistics.median(values):.2f}x ({min(values):.2f} to {max(values):.2f})"


def main():
    with open(sys.argv[1]) as f:
        states = rounds(f)
    clean, full = states.get("clean", []), states.get("full", [])
    print(f"{len(clean)} clean and {len(full)} full rounds; median (lowest to highest)\n")
    print("| ratio | clean | full | target | met |")
    print("|---|---|---|---|---|")
    for what, ours, base, target in RATIOS:
        per = [[r[base] / r[ours] for r in rs if ours in r and base in r] for rs in (clean, full)]
        if not all(per):
            continue
        medians = [statistics.median(p) for p in per]
        if target is None:
            goal, met = "", ""
        elif target == "clean":
            goal, met = "full ≥ clean", "yes" if medians[1] >= medians[0] else "**no**"
        else:
            goal, met = f"≥ {target}x", "yes" if min(medians) >= target else "**no**"
        print(f"| {what} | {spread(per[0])} | {spread(per[1])} | {goal} | {met} |")
    print("\n| time, median ms | clean | full |")
    print("|---|---|---|")
    for path in TIMES:
        cells = [f"{statistics.median(r[path] for r in rs):.1f}" if all(path in r for r in rs)
                 and rs else "" for rs in (clean, full)]
        print(f"| {path} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
