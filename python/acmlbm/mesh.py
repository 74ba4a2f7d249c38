"""Mesh: a triangle surface for solids (acm_mesh.h): read from STL or OBJ, from
bytes in memory, or made from numpy arrays. Hostile files are refused with
BadFormatError and a message saying where and why."""
from __future__ import annotations

import ctypes
import os
from typing import Any

import numpy as np

from . import _capi, enums
from ._capi import fn
from ._handle import Handle, versioned
from .errors import check


def _options(fmt: enums.EnumLike, max_triangles: int):
    o = _capi.MeshOptions()
    check(fn.acm_mesh_options_init(ctypes.byref(o), o.VERSION))
    o.format = enums.as_enum(enums.MeshFormat, fmt, "mesh format")
    o.max_triangles = int(max_triangles)
    err = ctypes.create_string_buffer(1024)
    o.error_buffer = ctypes.cast(err, ctypes.c_void_p).value
    o.error_buffer_size = len(err)
    return o, err


class Mesh(Handle):
    """A triangle mesh. ``Mesh.load("bunny.stl")``, ``Mesh.from_bytes(data)``,
    ``Mesh(vertices, triangles)`` with vertices (n, 3) and triangles (m, 3) indices.
    Solids copy what they need: a mesh may be closed once its solids exist."""

    _kind = "mesh"

    def __init__(self, vertices: Any, triangles: Any, *, max_triangles: int = 0):
        super().__init__()
        v = np.ascontiguousarray(vertices, dtype=np.float64).reshape(-1, 3)
        t = np.ascontiguousarray(triangles, dtype=np.uint32).reshape(-1, 3)
        o, err = _options("auto", max_triangles)
        check(fn.acm_mesh_create(ctypes.byref(self._h), v.ctypes.data, len(v), t.ctypes.data,
                                 len(t), ctypes.byref(o)), lambda: err.value)

    @classmethod
    def _made(cls, call, *args, fmt: enums.EnumLike, max_triangles: int) -> "Mesh":
        m = cls.__new__(cls)
        Handle.__init__(m)
        o, err = _options(fmt, max_triangles)
        check(call(ctypes.byref(m._h), *args, ctypes.byref(o)), lambda: err.value)
        return m

    @classmethod
    def load(cls, path: "str | os.PathLike[str]", *, format: enums.EnumLike = "auto",
             max_triangles: int = 0) -> "Mesh":
        """Read an STL (binary or ASCII) or OBJ file; format "auto" goes by the content."""
        return cls._made(fn.acm_mesh_load, os.fsencode(path), fmt=format,
                         max_triangles=max_triangles)

    @classmethod
    def from_bytes(cls, data: bytes, *, format: enums.EnumLike = "auto",
                   max_triangles: int = 0) -> "Mesh":
        """Parse a mesh file's bytes."""
        buf = bytes(data)
        return cls._made(fn.acm_mesh_load_memory, buf, len(buf), fmt=format,
                         max_triangles=max_triangles)

    def _destroy(self, h: ctypes.c_void_p) -> None:
        fn.acm_mesh_destroy(h)

    def _message(self) -> bytes:
        return fn.acm_mesh_last_error(self._h)

    def info(self) -> dict[str, Any]:
        """Counts, bounding box, area, volume, centroid, inertia and whether it is closed."""
        s = versioned(_capi.MeshInfo)
        self._call(fn.acm_mesh_get_info, ctypes.byref(s))
        out = {}
        for name, _ in s._fields_:
            v = getattr(s, name)
            out[name] = tuple(v) if isinstance(v, ctypes.Array) else v
        out.pop("version")
        out["closed"] = bool(out["closed"])
        return out

    def vertices(self) -> np.ndarray:
        """(n, 3) float64."""
        n = self.info()["vertex_count"]
        out = np.empty((n, 3), np.float64)
        self._call(fn.acm_mesh_get_vertices, out.ctypes.data, n)
        return out

    def triangles(self) -> np.ndarray:
        """(m, 3) uint32 vertex indices."""
        m = self.info()["triangle_count"]
        out = np.empty((m, 3), np.uint32)
        self._call(fn.acm_mesh_get_triangles, out.ctypes.data, m)
        return out
