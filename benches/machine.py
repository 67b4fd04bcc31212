#!/usr/bin/env python3
"""The machine a benchmark ran on, printed beside its figures: the CPU model (Intel and AMD
machines rank the peers differently), the cores and the memory.

    python3 benches/machine.py      # one line, as every benchmark prints it first
"""
import os
import platform


def describe() -> str:
    """``CPU: <model>, <n> cores, <m> GiB`` from ``/proc/cpuinfo`` and ``/proc/meminfo``
    (elsewhere what ``platform`` knows)."""
    model, memory = platform.processor() or platform.machine() or "unknown", ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f
                          if line.startswith("model name")), model)
        with open("/proc/meminfo") as f:
            kib = int(next(line.split()[1] for line in f if line.startswith("MemTotal:")))
            memory = f", {kib / (1 << 20):.0f} GiB"
    except (OSError, StopIteration, ValueError):
        pass
    return f"CPU: {model}, {os.cpu_count()} cores{memory}"


if __name__ == "__main__":
    print(describe())
