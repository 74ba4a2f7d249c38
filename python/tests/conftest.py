"""Shared fixtures. The tests import the installed package (pip install .); to run
them against a build tree instead, put python/ on PYTHONPATH and point
ACMLBM_LIBRARY at the build's libacmlbm.so.1."""
import numpy as np
import pytest

import acmlbm


def sphere_mesh(radius=1.0, subdivisions=2):
    """A closed icosphere: vertices (n, 3), triangles (m, 3), outward winding."""
    t = (1 + 5 ** 0.5) / 2
    v = [(-1, t, 0), (1, t, 0), (-1, -t, 0), (1, -t, 0), (0, -1, t), (0, 1, t), (0, -1, -t),
         (0, 1, -t), (t, 0, -1), (t, 0, 1), (-t, 0, -1), (-t, 0, 1)]
    f = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4),
         (11, 10, 2), (10, 7, 6), (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8),
         (3, 8, 9), (4, 9, 5), (2, 4, 11), (6, 2, 10), (8, 6, 7), (9, 8, 1)]
    verts = [np.array(p, float) / np.linalg.norm(p) for p in v]
    for _ in range(subdivisions):
        mid = {}

        def middle(a, b):
            key = (min(a, b), max(a, b))
            if key not in mid:
                m = verts[a] + verts[b]
                verts.append(m / np.linalg.norm(m))
                mid[key] = len(verts) - 1
            return mid[key]

        nf = []
        for a, b, c in f:
            ab, bc, ca = middle(a, b), middle(b, c), middle(c, a)
            nf += [(a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca)]
        f = nf
    return np.array(verts) * radius, np.array(f, dtype=np.uint32)


@pytest.fixture
def domain():
    with acmlbm.Domain((12, 10, 8), viscosity=0.05, backend="cpu") as d:
        yield d


@pytest.fixture
def sphere():
    return acmlbm.Mesh(*sphere_mesh(3.0))
