"""Times NumPy reading files, for scripts/bench-read-modes.sh.

Usage: bench_read_modes.py fromfile|mmap SPEC...
Each SPEC is PATH or PATH:OFFSET:LENGTH (bytes of a file at an offset, as a
tensor sits in its source). Prints the nanoseconds taken to read every SPEC
once: `numpy.fromfile`, or `numpy.memmap(mode="r")` and a sum of its bytes.
"""

import os
import sys
import time

import numpy as np


def spec(s):
    parts = s.rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
        return parts[0], int(parts[1]), int(parts[2])
    return s, 0, os.path.getsize(s)


def main():
    how, specs = sys.argv[1], [spec(s) for s in sys.argv[2:]]
    total = 0
    start = time.perf_counter_ns()
    for path, offset, length in specs:
        if how == "fromfile":
            a = np.fromfile(path, dtype=np.uint8, count=length, offset=offset)
            total += a.size
        else:
            m = np.memmap(path, dtype=np.uint8, mode="r", offset=offset, shape=(length,))
            total += int(m.sum(dtype=np.uint64)) & 1
            del m
    end = time.perf_counter_ns()
    assert total >= 0
    print(end - start)


main()
