#!/usr/bin/env python3
"""What the Python package adds to a step loop (docs/python.md, "Overhead").

Per call: Domain.step(0) (the wrapper, ctypes and the library's call guard; no
step) against the raw ctypes call of acm_step(d, 0). Per step loop: n calls of
Domain.step(1) against one Domain.step(n), whose loop runs in C inside the
library, on an N^3 domain of the backend asked for; on CUDA also n calls of
step_async(1) and one synchronize (acm_step waits for the GPU at its end, so a
loop of step(1) measures that wait as much as Python); and n bare ctypes calls of
acm_step(d, 1), what a C loop of single steps pays (a call of the library, its
OpenMP team woken per call) plus the bare call's 0.4 us. Prints the figures and
the machine's CPU count; takes the median of --repeat runs.

    python3 bench/python-overhead.py --size 64 --steps 200 --backend cpu
"""
import argparse
import os
import statistics
import time

import acmlbm
from acmlbm._capi import fn


def per_call_us(call, n):
    t = time.perf_counter()
    for _ in range(n):
        call()
    return (time.perf_counter() - t) / n * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--calls", type=int, default=200000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--backend", default="cpu")
    a = ap.parse_args()
    print(f"acmlbm {acmlbm.__version__}, backend {a.backend}, {os.cpu_count()} CPUs, "
          f"{a.size}^3, {a.steps} steps, median of {a.repeat}")
    with acmlbm.Domain((4, 4, 4), viscosity=0.1, backend=a.backend) as d:
        h = d._h
        wrapped = statistics.median(per_call_us(lambda: d.step(0), a.calls)
                                    for _ in range(a.repeat))
        raw = statistics.median(per_call_us(lambda: fn.acm_step(h, 0), a.calls)
                                for _ in range(a.repeat))
    print(f"per call: Domain.step(0) {wrapped:.2f} us, ctypes acm_step(d, 0) {raw:.2f} us "
          f"(the wrapper's share {wrapped - raw:.2f} us)")
    with acmlbm.Domain((a.size,) * 3, viscosity=0.01, backend=a.backend) as d:
        d.init_uniform(1.0, (0.02, 0.01, 0.0))
        d.step(10)  # warm up: threads, caches
        loops, ones, raws = [], [], []
        h = d._h
        for _ in range(a.repeat):
            t = time.perf_counter()
            d.step(a.steps)
            ones.append(time.perf_counter() - t)
            t = time.perf_counter()
            for _ in range(a.steps):
                d.step(1)
            loops.append(time.perf_counter() - t)
            t = time.perf_counter()
            for _ in range(a.steps):
                fn.acm_step(h, 1)
            raws.append(time.perf_counter() - t)
        one, loop = statistics.median(ones), statistics.median(loops)
        raw = statistics.median(raws)
        cells = a.size ** 3 * a.steps
        print(f"step({a.steps}) once: {one / a.steps * 1e3:.3f} ms/step "
              f"({cells / one / 1e6:.1f} MLUPS)")
        print(f"step(1) x {a.steps} from Python: {loop / a.steps * 1e3:.3f} ms/step "
              f"({cells / loop / 1e6:.1f} MLUPS)")
        print(f"bare ctypes acm_step(d, 1) x {a.steps}: {raw / a.steps * 1e3:.3f} ms/step "
              f"(what a C loop of single steps costs, plus 0.4 us a call)")
        print(f"overhead of the Python loop: {(loop / one - 1) * 100:+.2f} % against "
              f"step({a.steps}), {(loop / raw - 1) * 100:+.2f} % against the bare calls")
        if d.info().backend == acmlbm.Backend.CUDA:
            # acm_step() waits for the GPU at its end, from C as from Python; what the
            # Python calls themselves cost shows when they only enqueue
            asyncs = []
            for _ in range(a.repeat):
                t = time.perf_counter()
                for _ in range(a.steps):
                    d.step_async(1)
                d.synchronize()
                asyncs.append(time.perf_counter() - t)
            loop = statistics.median(asyncs)
            print(f"step_async(1) x {a.steps} from Python, then synchronize: "
                  f"{loop / a.steps * 1e3:.3f} ms/step ({cells / loop / 1e6:.1f} MLUPS, "
                  f"{(loop / one - 1) * 100:+.2f} % against step({a.steps}))")


if __name__ == "__main__":
    main()
