#!/usr/bin/env python3
"""The machine a benchmark ran on, printed beside its figures: the CPU model (Intel and AMD
machines rank the peers differently), the cores and the memory; and `timed`, one process's
wall time and peak resident memory.

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


def timed(cmd, env=None):
    """Wall seconds, peak RSS (MiB) and stderr of one process, from /usr/bin/time (a child's
    rusage seen from here would count this Python's pages it was forked with)."""
    import subprocess
    import tempfile

    with tempfile.NamedTemporaryFile("r") as out:
        done = subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", out.name, *map(str, cmd)],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(map(str, cmd))} failed: {done.stderr}")
        wall, kib = out.read().split()[-2:]
    return float(wall), int(kib) / 1024, done.stderr


if __name__ == "__main__":
    print(describe())
