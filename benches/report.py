#!/usr/bin/env python3
"""Prints criterion's last results as Markdown tables of throughput and ratios.

Usage: python3 benches/report.py [GROUP_PREFIX ...]   (after `cargo bench --bench NAME`)

Throughput is payload bytes per second from the median time. Each row shows its ratio to
the group's `memcpy/warm` and `memcpy/fresh` (whichever are present) and to any baselines
named with --vs (e.g. --vs npy/write_reused).
"""
import json
import pathlib
import sys

from machine import describe

ROOT = pathlib.Path(__file__).resolve().parent.parent / "target" / "criterion"


def load():
    groups = {}
    for est in ROOT.glob("**/new/estimates.json"):
        bench_dir = est.parent.parent
        meta = json.loads((est.parent / "benchmark.json").read_text())
        median = json.loads(est.read_text())["median"]["point_estimate"]  # ns
        tp = meta.get("throughput") or {}
        payload = tp.get("Bytes") or tp.get("BytesDecimal")
        if payload is None:
            continue
        groups.setdefault(meta["group_id"], {})[meta["function_id"] or meta["value_str"]] = (
            median,
            payload,
        )
    return groups


def main():
    print(describe())
    prefixes = [a for a in sys.argv[1:] if not a.startswith("-")]
    for name, rows in sorted(load().items()):
        if prefixes and not any(name.startswith(p) for p in prefixes):
            continue
        print(f"\n### {name}\n")
        print("| benchmark | median | GB/s | × warm memcpy | × fresh memcpy |")
        print("|---|---:|---:|---:|---:|")
        warm = rows.get("memcpy/warm")
        fresh = rows.get("memcpy/fresh")
        for fid, (ns, payload) in sorted(rows.items()):
            gbs = payload / ns
            cells = [fid, f"{ns / 1e6:.2f} ms", f"{gbs:.2f}"]
            for base in (warm, fresh):
                cells.append(f"{base[0] / ns:.2f}" if base else "")
            print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
