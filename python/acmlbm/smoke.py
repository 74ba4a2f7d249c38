"""Smoke: tracer particles carried by a domain's flow (acm_smoke.h), emitted from
boxes, balls, points or a solid's surface; read as positions or as a density
grid, exported as PLY/VTP particles, VTK or OpenVDB density."""
from __future__ import annotations

import ctypes
import dataclasses
import os
from typing import Any, Optional, Sequence

import numpy as np

from . import _capi, enums
from ._capi import fn
from ._handle import Member, record, versioned
from .errors import check

_SHAPES = {"box": 1, "sphere": 2, "points": 3, "solid": 4}


@dataclasses.dataclass(frozen=True)
class SmokeInfo:
    capacity: int
    alive: int
    emitted: int
    left: int
    expired: int
    dropped: int
    emitters: int
    absorbed: int


class Smoke(Member):
    """A smoke of ``capacity`` particles at most in ``domain``, stepped with it. It
    belongs to its domain as a Solid does: it stays until ``close()`` or the domain's
    end (``domain.smokes()`` gives it back) and keeps the domain alive."""

    _kind = "smoke"

    def __init__(self, domain, capacity: int = 1 << 20, seed: int = 0):
        super().__init__()
        o = _capi.SmokeOptions()
        check(fn.acm_smoke_options_init(ctypes.byref(o), o.VERSION))
        o.capacity = int(capacity)
        o.seed = int(seed)
        check(fn.acm_smoke_create(ctypes.byref(self._h), domain._ptr(), ctypes.byref(o)),
              domain._message)
        self._join(domain)

    def _destroy(self, h: ctypes.c_void_p) -> None:
        fn.acm_smoke_destroy(h)

    def _message(self) -> bytes:
        return fn.acm_smoke_last_error(self._h)

    def add_emitter(self, shape: str, *, rate: float, lifetime: int = 0,
                    lo: Sequence[float] = (0, 0, 0), hi: Sequence[float] = (0, 0, 0),
                    centre: Sequence[float] = (0, 0, 0), radius: float = 0.0,
                    points: Any = None, solid=None, offset: float = 0.0) -> None:
        """An emitter of ``rate`` particles per step living ``lifetime`` steps (0: until
        they leave): shape "box" (lo, hi), "sphere" (centre, radius), "points" ((n, 3)
        array, used in turn) or "solid" (on its surface, ``offset`` cells out)."""
        if shape not in _SHAPES:
            raise ValueError(f"unknown emitter shape {shape!r}: one of " + ", ".join(_SHAPES))
        e = _capi.Emitter()
        e.version = e.VERSION
        e.shape = _SHAPES[shape]
        e.lo[:] = [float(v) for v in lo]
        e.hi[:] = [float(v) for v in hi]
        e.centre[:] = [float(v) for v in centre]
        e.radius = float(radius)
        e.rate = float(rate)
        e.lifetime = int(lifetime)
        pts = None
        if points is not None:
            pts = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3)
            e.points = pts.ctypes.data_as(ctypes.POINTER(ctypes.c_double))
            e.point_count = len(pts)
        if solid is not None:
            e.solid = solid._ptr().value
        e.offset = float(offset)
        self._call(fn.acm_smoke_add_emitter, ctypes.byref(e))

    def info(self) -> SmokeInfo:
        s = versioned(_capi.SmokeInfo)
        self._call(fn.acm_smoke_get_info, ctypes.byref(s))
        return record(SmokeInfo, s)

    def particles(self) -> np.ndarray:
        """Positions of the particles alive, (n, 3), lattice units."""
        n = self.info().alive
        out = np.empty((max(n, 1), 3), np.float64)
        written = ctypes.c_size_t()
        self._call(fn.acm_smoke_get_particles, out.ctypes.data, len(out),
                   ctypes.byref(written))
        return out[:written.value]

    def _grid(self, subdivisions: int) -> tuple[int, ...]:
        s = int(subdivisions)
        nz, ny, nx = self.domain.shape
        return (nz * s, ny * s, nx * s)

    def density(self, subdivisions: int = 1,
                out: Optional[np.ndarray] = None) -> np.ndarray:
        """Particles per cell volume on a grid ``subdivisions`` times finer than the
        fluid's, float32 (nz*s, ny*s, nx*s)."""
        shape = self._grid(subdivisions)
        if out is None:
            out = np.empty(shape, np.float32)
        elif out.dtype != np.float32 or out.shape != shape or not out.flags.c_contiguous:
            raise ValueError(f"out must be a C-contiguous float32 array of shape {shape}")
        self._call(fn.acm_smoke_density, int(subdivisions), out.ctypes.data, out.size)
        return out

    def device_density(self, subdivisions: int = 1, out: Any = None) -> Any:
        """CUDA: the density grid written into a device array of yours (anything with
        ``__cuda_array_interface__``, e.g. a CuPy or PyTorch float32 array of the
        grid's shape), on the domain's stream. Returns ``out``."""
        cai = getattr(out, "__cuda_array_interface__", None)
        shape = self._grid(subdivisions)
        c_strides = (shape[1] * shape[2] * 4, shape[2] * 4, 4)
        if (cai is None or cai["typestr"] != "<f4" or tuple(cai["shape"]) != shape
                or cai.get("strides") not in (None, c_strides)):
            raise ValueError(f"out must be a C-contiguous float32 device array of shape "
                             f"{shape}")
        self._call(fn.acm_cuda_smoke_density, int(subdivisions),
                   ctypes.c_void_p(cai["data"][0]), int(np.prod(shape)))
        return out

    def export(self, path: "str | os.PathLike[str]",
               format: enums.EnumLike = "ply") -> None:
        """The particles as a PLY or VTP point cloud."""
        self._call(fn.acm_smoke_export, os.fsencode(path),
                   enums.as_enum(enums.ParticleFormat, format, "particle format"))

    def export_density(self, path: "str | os.PathLike[str]", subdivisions: int = 1) -> None:
        """The density grid as a VTK image (.vti)."""
        self._call(fn.acm_smoke_export_density, os.fsencode(path), int(subdivisions))

    def export_vdb(self, path: "str | os.PathLike[str]", subdivisions: int = 1,
                   velocity: bool = False) -> None:
        """The density (and the fluid velocity) as OpenVDB grids, for Houdini or Blender."""
        self._call(fn.acm_smoke_export_vdb, os.fsencode(path), int(subdivisions),
                   1 if velocity else 0)
