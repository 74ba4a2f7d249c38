"""Solid: a rigid body immersed in a domain (acm_solid.h), static, moved by the
caller (prescribed) or by the fluid (free), felt by the fluid through the
immersed-boundary method."""
from __future__ import annotations

import ctypes
import dataclasses
from typing import Any, Optional, Sequence

import numpy as np

from . import _capi, enums
from ._capi import fn
from ._handle import Member, record, versioned
from .errors import check
from .mesh import Mesh

_OPTION_NAMES = ("scale", "position", "orientation", "samples_per_cell", "surface_inset",
                 "seed", "ib_alpha", "velocity", "angular_velocity", "density", "mass",
                 "volume", "inertia", "gravity", "max_samples")


@dataclasses.dataclass(frozen=True)
class SolidState:
    """Pose and velocities: position (cells), orientation (unit quaternion w, x, y, z,
    body to world), velocity (cells per step), angular_velocity (world, radians per step)."""
    position: tuple
    orientation: tuple
    velocity: tuple
    angular_velocity: tuple


@dataclasses.dataclass(frozen=True)
class SolidInfo:
    sample_count: int
    area: float
    sample_spacing: float
    motion: int
    volume: float
    mass: float
    inertia: tuple
    ib_alpha: float
    resorts: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "motion", enums.Motion(self.motion))


def _set(o: ctypes.Structure, name: str, value: Any) -> None:
    if name not in _OPTION_NAMES:
        raise TypeError(f"unknown solid option {name!r}: one of " + ", ".join(_OPTION_NAMES))
    field = getattr(o, name)
    if isinstance(field, ctypes.Array):
        vals = [float(v) for v in value]
        if len(vals) != len(field):
            raise ValueError(f"{name} needs {len(field)} values, got {len(vals)}")
        field[:] = vals
    else:
        setattr(o, name, value)


class Solid(Member):
    """A solid in ``domain``: from a Mesh (sampled by the library) or from caller
    samples (``points`` (n, 3) in the body frame and their ``areas`` (n,)).
    Keyword options are acm_solid_options' fields with its defaults: scale,
    position, orientation, samples_per_cell, surface_inset, seed, ib_alpha,
    velocity, angular_velocity, density, mass, volume, inertia, gravity,
    max_samples; ``motion`` "static", "prescribed" or "free".

    A solid belongs to its domain, as in C: it stays in the domain until
    ``close()`` (or the end of its ``with`` block) removes it, whether Python
    still refers to it or not (``domain.solids()`` gives it back), and goes with
    the domain. While Python refers to it, it keeps the domain alive."""

    _kind = "solid"

    def __init__(self, domain, mesh: Optional[Mesh] = None, *, points: Any = None,
                 areas: Any = None, motion: enums.EnumLike = "static", **options: Any):
        super().__init__()
        o = _capi.SolidOptions()
        check(fn.acm_solid_options_init(ctypes.byref(o), o.VERSION))
        keep = []
        if mesh is not None:
            o.mesh = mesh._ptr().value
        if points is not None:
            p = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3)
            a = np.ascontiguousarray(areas if areas is not None else np.ones(len(p)),
                                     dtype=np.float64).reshape(-1)
            keep += [p, a]
            o.sample_count = len(p)
            o.sample_points = p.ctypes.data_as(ctypes.POINTER(ctypes.c_double))
            o.sample_areas = a.ctypes.data_as(ctypes.POINTER(ctypes.c_double))
        o.motion = enums.as_enum(enums.Motion, motion, "motion")
        for name, value in options.items():
            _set(o, name, value)
        check(fn.acm_solid_create(ctypes.byref(self._h), domain._ptr(), ctypes.byref(o)),
              domain._message)
        self._join(domain)

    def _destroy(self, h: ctypes.c_void_p) -> None:
        fn.acm_solid_destroy(h)

    def _message(self) -> bytes:
        return fn.acm_solid_last_error(self._h)

    @property
    def state(self) -> SolidState:
        s = versioned(_capi.SolidState)
        self._call(fn.acm_solid_get_state, ctypes.byref(s))
        return record(SolidState, s)

    @state.setter
    def state(self, value: SolidState) -> None:
        self.set_state(**dataclasses.asdict(value))

    def set_state(self, **changes: Sequence[float]) -> None:
        """Change some of position, orientation, velocity, angular_velocity (the others
        stay): teleport, drive frame by frame, launch a free body."""
        s = versioned(_capi.SolidState)
        self._call(fn.acm_solid_get_state, ctypes.byref(s))
        for name, value in changes.items():
            if name not in ("position", "orientation", "velocity", "angular_velocity"):
                raise TypeError(f"unknown state field {name!r}")
            getattr(s, name)[:] = [float(v) for v in value]
        self._call(fn.acm_solid_set_state, ctypes.byref(s))

    @property
    def motion(self) -> enums.Motion:
        return self.info().motion

    @motion.setter
    def motion(self, value: enums.EnumLike) -> None:
        self._call(fn.acm_solid_set_motion, enums.as_enum(enums.Motion, value, "motion"))

    def set_load(self, force: Sequence[float] = (0, 0, 0),
                 torque: Sequence[float] = (0, 0, 0)) -> None:
        """Loads on a free body every step, besides the fluid and gravity (world frame)."""
        self._call(fn.acm_solid_set_load, _capi.d3(force, "force"), _capi.d3(torque, "torque"))

    def force(self) -> tuple[np.ndarray, np.ndarray]:
        """(force, torque) the fluid exerted in the last step."""
        f = (ctypes.c_double * 3)()
        t = (ctypes.c_double * 3)()
        self._call(fn.acm_solid_get_force, f, t)
        return np.array(f), np.array(t)

    def info(self) -> SolidInfo:
        s = versioned(_capi.SolidInfo)
        self._call(fn.acm_solid_get_info, ctypes.byref(s))
        return record(SolidInfo, s)

    def samples(self) -> np.ndarray:
        """World positions of the surface samples, (n, 3)."""
        n = self.info().sample_count
        out = np.empty((n, 3), np.float64)
        self._call(fn.acm_solid_get_samples, out.ctypes.data, n)
        return out

    def contains(self, point: Sequence[float]) -> bool:
        """Whether a world point is inside (a closed mesh only)."""
        inside = ctypes.c_int()
        self._call(fn.acm_solid_is_inside, _capi.d3(point, "point"), ctypes.byref(inside))
        return bool(inside.value)

    def occupancy(self, out: Optional[np.ndarray] = None) -> np.ndarray:
        """uint8 (nz, ny, nx), 1 where a cell centre is inside; into ``out`` to combine
        several solids (cells outside are left as they were)."""
        shape = self.domain.shape
        if out is None:
            out = np.zeros(shape, np.uint8)
        elif out.dtype != np.uint8 or out.shape != shape or not out.flags.c_contiguous:
            raise ValueError(f"out must be a C-contiguous uint8 array of shape {shape}")
        self._call(fn.acm_solid_mark_occupancy, out.ctypes.data, out.nbytes)
        return out
