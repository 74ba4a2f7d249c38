#!/usr/bin/env python3
"""The lid-driven cavity from Python: an N^3 box of resting walls whose top (y = max)
slides along x, stepped with a progress line, then the speed on the mid-plane
drawn with matplotlib (colour: |u|/U; white: streamlines of the in-plane flow).

    python3 python/examples/cavity.py --size 32 --re 100 --steps 2000 --out cavity_py.png
"""
import argparse
import sys
import time

import numpy as np

import acmlbm


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=32)
    ap.add_argument("--re", type=float, default=100.0)
    ap.add_argument("--lid", type=float, default=0.05)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--out", default="cavity_py.png")
    a = ap.parse_args()
    n = a.size
    with acmlbm.Domain((n, n, n), viscosity=a.lid * n / a.re, backend=a.backend) as d:
        for face in acmlbm.Face:
            d.set_face(face, "wall")
        d.set_face("y_max", "wall", velocity=(a.lid, 0, 0))
        print(d)
        t0 = time.perf_counter()

        def progress(done, total):
            mlups = n ** 3 * done / (time.perf_counter() - t0) / 1e6
            print(f"\r  step {done}/{total}  max |u|/U {d.stats().max_speed / a.lid:.3f}"
                  f"  {mlups:.0f} MLUPS", end="", flush=True)

        d.step(a.steps, progress=progress, every=max(1, a.steps // 20))
        print()
        u = d.velocity()[n // 2]  # the mid-plane z = N/2: (y, x, 3)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no picture (pip install matplotlib)")
        return 0
    speed = np.hypot(u[..., 0], u[..., 1]) / a.lid
    fig, ax = plt.subplots(figsize=(5.2, 4.6), dpi=120)
    im = ax.imshow(speed, origin="lower", cmap="magma", vmin=0, vmax=1,
                   extent=(-0.5, n - 0.5, -0.5, n - 0.5))
    grid = np.arange(n)
    ax.streamplot(grid, grid, u[..., 0], u[..., 1], color="white", linewidth=0.6,
                  density=1.2, arrowsize=0.6)
    ax.set_title(f"lid-driven cavity {n}³, Re {a.re:g}, step {a.steps}: |u|/U at z = N/2")
    ax.set_xlabel("x (lid moves +x along y = max)")
    ax.set_ylabel("y")
    fig.colorbar(im, ax=ax, shrink=0.85)
    fig.tight_layout()
    fig.savefig(a.out)
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
