"""Timings for scripts/bench-python.sh: each mode prints the median time in
nanoseconds of RUNS runs of one way to open a file and sum one tensor.

  ptefs FILE PATH RUNS            ptefs.open + numpy(PATH).sum()
  executorch FILE KEY RUNS        deserialize_pte_binary + the same sum
                                  (KEY: named data key, or const:<index>)
  safetensors FILE NAME RUNS      safe_open + get_tensor(NAME).sum()
  save FILE OUT                   every tensor of FILE, by tree path, as one
                                  safetensors file (prints nothing)
  phases PTE SAFETENSORS PATH RUNS
                                  where each way's time goes: medians of
                                  open, array, sum and close, a line each
  settle FILE...                  drops each file from the page cache and
                                  reads it back whole (prints nothing)
"""

import statistics
import sys
import time


def median_ns(fn, runs):
    times = []
    for _ in range(runs):
        start = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - start)
    return int(statistics.median(times))


def main():
    mode = sys.argv[1]
    if mode == "ptefs":
        import ptefs

        path, name, runs = sys.argv[2], sys.argv[3], int(sys.argv[4])

        def run():
            with ptefs.open(path) as f:
                return float(f.numpy(name).sum(dtype="f8"))

    elif mode == "executorch":
        import numpy as np
        from executorch.exir._serialize._program import deserialize_pte_binary

        path, key, runs = sys.argv[2], sys.argv[3], int(sys.argv[4])

        def run():
            with open(path, "rb") as f:
                pte = deserialize_pte_binary(f.read())
            if key.startswith("const:"):
                buf = pte.program.constant_buffer[int(key[6:])].storage
            else:
                named = pte.named_data
                buf = named.buffers[named.pte_data[key].buffer_index]
                buf = getattr(buf, "buffer", buf)
            return float(np.frombuffer(buf, "<f4").sum(dtype="f8"))

    elif mode == "safetensors":
        from safetensors import safe_open

        path, name, runs = sys.argv[2], sys.argv[3], int(sys.argv[4])

        def run():
            with safe_open(path, framework="np") as f:
                return float(f.get_tensor(name).sum(dtype="f8"))

    elif mode == "save":
        import ptefs
        from safetensors.numpy import save_file

        with ptefs.open(sys.argv[2]) as f:
            save_file({p: f.numpy(p) for p in f.tensors()}, sys.argv[3])
        return
    elif mode == "phases":
        import ptefs
        from safetensors import safe_open

        pte, st, name, runs = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])

        def st_open():
            f = safe_open(st, framework="np")
            f.__enter__()
            return f

        ways = {
            "ptefs": (lambda: ptefs.open(pte), lambda f: f.numpy(name), lambda f: f.close()),
            "safetensors": (st_open, lambda f: f.get_tensor(name), lambda f: f.__exit__(None, None, None)),
        }
        for way, (open_, array, close) in ways.items():
            phases = [[], [], [], []]
            for _ in range(runs + 1):
                t0 = time.perf_counter_ns()
                f = open_()
                t1 = time.perf_counter_ns()
                a = array(f)
                t2 = time.perf_counter_ns()
                float(a.sum(dtype="f8"))
                t3 = time.perf_counter_ns()
                del a
                close(f)
                del f
                t4 = time.perf_counter_ns()
                for i, d in enumerate((t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
                    phases[i].append(d)
            # The first run warms imports and caches.
            print(way, *(int(statistics.median(p[1:])) for p in phases))
        return
    elif mode == "settle":
        # Mapped reads of cached pages cost more or less by how the pages
        # came into the cache (the kernel may hold a file read ahead in
        # large folios, and one written or read in small pieces in single
        # pages): the files compared come in the same way, read whole.
        import os

        for path in sys.argv[2:]:
            fd = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                while os.read(fd, 1 << 24):
                    pass
            finally:
                os.close(fd)
        return
    else:
        raise SystemExit(__doc__)
    run()  # warm: imports, page cache
    print(median_ns(run, runs))


if __name__ == "__main__":
    main()
