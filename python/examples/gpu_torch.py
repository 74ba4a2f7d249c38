#!/usr/bin/env python3
"""A GPU consumer without a copy: the domain steps on the GPU and PyTorch (or CuPy)
reads its velocity field where it is, through DLPack, on the domain's stream, to
compute the vorticity magnitude on the device. Checks that the tensor's memory is
the domain's own (pointer identity) and that it equals a host read.

    python3 python/examples/gpu_torch.py --size 96 --steps 500
"""
import argparse
import sys
import time

import numpy as np

import acmlbm


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=96)
    ap.add_argument("--steps", type=int, default=500)
    a = ap.parse_args()
    if not acmlbm.backend_available("cuda"):
        print("no CUDA device (or a library built without CUDA): nothing to show")
        return 0
    import torch
    n = a.size
    with acmlbm.Domain((n, n, n), viscosity=0.005, backend="cuda") as d:
        for face in acmlbm.Face:
            d.set_face(face, "wall")
        d.set_face("y_max", "wall", velocity=(0.08, 0, 0))
        t = time.perf_counter()
        d.step(a.steps)
        dt = time.perf_counter() - t
        print(f"{d}: {a.steps} steps in {dt:.2f} s ({n ** 3 * a.steps / dt / 1e6:.0f} MLUPS)")
        rho, vel = d.device_fields()
        u = torch.from_dlpack(vel)  # (z, y, x, 3) float32 on the GPU, no copy
        print(f"torch tensor {tuple(u.shape)} {u.dtype} on {u.device}; data_ptr "
              f"{u.data_ptr():#x}, the domain's buffer {vel.ptr:#x}: "
              f"{'the same memory' if u.data_ptr() == vel.ptr else 'A COPY'}")
        # vorticity |curl u| by central differences, on the GPU
        ux, uy, uz = u[..., 0], u[..., 1], u[..., 2]
        g = lambda f, dim: torch.gradient(f, dim=dim)[0]
        wx = g(uz, 1) - g(uy, 0)
        wy = g(ux, 0) - g(uz, 2)
        wz = g(uy, 2) - g(ux, 1)
        w = torch.sqrt(wx * wx + wy * wy + wz * wz)
        print(f"max |curl u| {w.max().item():.5f}, mean {w.mean().item():.6f} (lattice units)")
        same = np.array_equal(u.cpu().numpy(), d.velocity())
        print(f"equal to Domain.velocity() read through the host: {same}")
        return 0 if same and u.data_ptr() == vel.ptr else 1


if __name__ == "__main__":
    sys.exit(main())
