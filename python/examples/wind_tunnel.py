#!/usr/bin/env python3
"""A mesh in a wind tunnel: an inlet at x = 0, an outlet with an absorbing layer at
x = max, free-slip side walls; the mesh (STL or OBJ) scaled to --size cells across
and placed a third of the way in. Prints the drag and lift forces and the drag
coefficient C_D = F_x / (rho U^2 A / 2), A the projected frontal area (the cells the
solid covers, seen along x), every --every steps.

    python3 python/examples/wind_tunnel.py data/meshes/torus.obj --size 16 --steps 1500
"""
import argparse
import pathlib
import sys


import acmlbm

HERE = pathlib.Path(__file__).resolve().parent


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mesh", nargs="?", default=str(HERE.parents[1] / "data/meshes/torus.obj"))
    ap.add_argument("--size", type=float, default=16.0, help="the mesh's largest extent, cells")
    ap.add_argument("--re", type=float, default=50.0, help="U size / nu")
    ap.add_argument("--wind", type=float, default=0.05)
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--every", type=int, default=250)
    ap.add_argument("--backend", default="auto")
    a = ap.parse_args()
    mesh = acmlbm.Mesh.load(a.mesh)
    info = mesh.info()
    extent = max(hi - lo for lo, hi in zip(info["bbox_min"], info["bbox_max"]))
    scale = a.size / extent
    nx, ny, nz = int(6 * a.size), int(3 * a.size), int(3 * a.size)
    print(f"{pathlib.Path(a.mesh).name}: {info['triangle_count']} triangles, closed "
          f"{info['closed']}; tunnel {nx}x{ny}x{nz}, Re {a.re:g}, wind {a.wind}")
    with acmlbm.Domain((nx, ny, nz), viscosity=a.wind * a.size / a.re, backend=a.backend,
                       velocity=(a.wind, 0, 0)) as d:
        d.set_face("x_min", "inlet", velocity=(a.wind, 0, 0))
        d.set_face("x_max", "outlet")
        d.set_absorber("x_max", nx // 6, 0.5, 1.0, (a.wind, 0, 0))
        for face in ("y_min", "y_max", "z_min", "z_max"):
            d.set_face(face, "slip")
        solid = acmlbm.Solid(d, mesh, scale=scale, position=(nx / 3, ny / 2, nz / 2))
        print(f"solid: {solid.info().sample_count} surface samples; backend "
              f"{d.info().backend.name.lower()}")
        area = float(solid.occupancy().any(axis=2).sum())  # cells seen along x: (z, y)
        q = 0.5 * a.wind ** 2 * area
        print(f"{'step':>6} {'F_x':>10} {'F_y':>10} {'F_z':>10} {'C_D':>7}")
        for _ in range(a.steps // a.every):
            d.step(a.every)
            f, _ = solid.force()
            print(f"{d.stats().step:6d} {f[0]:10.4f} {f[1]:10.4f} {f[2]:10.4f} "
                  f"{f[0] / q:7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
