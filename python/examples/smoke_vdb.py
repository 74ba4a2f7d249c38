#!/usr/bin/env python3
"""Smoke for a DCC tool: a plume rising from a ball around a box obstacle, written
as one OpenVDB file per frame (a 'density' grid, and the fluid 'velocity' with
--velocity) that Houdini, Blender or any OpenVDB reader loads as a sequence.
Falls back to VTK images (.vti) where the library has no OpenVDB.

    python3 python/examples/smoke_vdb.py --frames 6 --out smoke_frames
"""
import argparse
import pathlib
import sys

import numpy as np

import acmlbm


def box_mesh(lo, hi):
    x0, y0, z0 = lo
    x1, y1, z1 = hi
    v = np.array([(x0, y0, z0), (x1, y0, z0), (x1, y1, z0), (x0, y1, z0),
                  (x0, y0, z1), (x1, y0, z1), (x1, y1, z1), (x0, y1, z1)], float)
    t = np.array([(0, 2, 1), (0, 3, 2), (4, 5, 6), (4, 6, 7), (0, 1, 5), (0, 5, 4),
                  (2, 3, 7), (2, 7, 6), (1, 2, 6), (1, 6, 5), (0, 4, 7), (0, 7, 3)])
    return acmlbm.Mesh(v, t)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=48)
    ap.add_argument("--frames", type=int, default=6)
    ap.add_argument("--steps-per-frame", type=int, default=40)
    ap.add_argument("--subdivisions", type=int, default=2)
    ap.add_argument("--velocity", action="store_true")
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--out", default="smoke_frames")
    a = ap.parse_args()
    n = a.size
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    vdb = acmlbm.vdb_available()
    with acmlbm.Domain((n, 2 * n, n), viscosity=0.01, backend=a.backend) as d:
        d.set_face("y_min", "inlet", velocity=(0, 0.04, 0))
        d.set_face("y_max", "outlet")
        d.set_absorber("y_max", n // 4, 0.5, 1.0, (0, 0.04, 0))
        acmlbm.Solid(d, box_mesh((-4, -2, -4), (4, 2, 4)), position=(n / 2, n, n / 2))
        smoke = acmlbm.Smoke(d, capacity=400_000, seed=7)
        smoke.add_emitter("sphere", centre=(n / 2, n / 4, n / 2), radius=n / 10, rate=300,
                          lifetime=4000)
        for frame in range(a.frames):
            d.step(a.steps_per_frame)
            if vdb:
                path = out / f"smoke.{frame:04d}.vdb"
                smoke.export_vdb(path, a.subdivisions, velocity=a.velocity)
            else:
                path = out / f"smoke.{frame:04d}.vti"
                smoke.export_density(path, a.subdivisions)
            print(f"frame {frame}: step {d.stats().step}, {smoke.info().alive} particles, "
                  f"{path} ({path.stat().st_size} bytes)")
    if not vdb:
        print("this libacmlbm has no OpenVDB export: wrote VTK images instead")
    return 0


if __name__ == "__main__":
    sys.exit(main())
