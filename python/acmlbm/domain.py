"""Domain: a box of nx x ny x nz D3Q27 lattice Boltzmann cells (acm_domain.h).

Arrays follow the library's memory order, x fastest: a scalar field has the
numpy shape (nz, ny, nx) and is indexed ``rho[z, y, x]``; a vector field
(nz, ny, nx, 3). Everything is in lattice units (cell 1, step 1)."""
from __future__ import annotations

import ctypes
import dataclasses
import os
import weakref
from typing import Any, Callable, Iterable, Optional, Sequence

import numpy as np

from . import _capi, enums
from ._capi import fn
from ._handle import Handle, Liveness, float_dtype, input_array, output, record, versioned
from .errors import CancelledError, check
from .layout import Layout


@dataclasses.dataclass(frozen=True)
class Stats:
    """Global diagnostics (acm_domain_stats): a pass over the domain."""
    step: int
    mass: float
    momentum: tuple
    kinetic_energy: float
    max_speed: float
    fallback_cells_last_step: int
    fallback_cells_total: int


@dataclasses.dataclass(frozen=True)
class Info:
    """What a domain is and runs with (acm_domain_info)."""
    nx: int
    ny: int
    nz: int
    backend: int
    device: int
    precision: int
    collision: int
    viscosity: float
    tau: float
    csoa_group: int
    kernel: int
    block_size: int
    step: int
    memory_bytes: int
    streaming: int
    bytes_per_cell: float

    def __post_init__(self) -> None:
        for name, cls in (("backend", enums.Backend), ("precision", enums.Precision),
                          ("collision", enums.Collision), ("kernel", enums.Kernel),
                          ("streaming", enums.Streaming)):
            object.__setattr__(self, name, cls(getattr(self, name)))


@dataclasses.dataclass(frozen=True)
class Absorber:
    """A face's absorbing layer (acm_domain_set_face_absorber); cells 0: none."""
    cells: int
    strength: float
    density: float
    velocity: tuple


@dataclasses.dataclass(frozen=True)
class DivergenceEvent:
    """What a divergence callback hears: the step that went bad, the step the
    domain was rewound to (-1 when it stopped) and the library's message."""
    step: int
    rewound_to: int
    message: str


_acm_step = fn.acm_step

_COLLISION_FIELDS = ("high_order_rate", "bulk_rate", "bulk_follows_high_order", "safety_net",
                     "max_high_order_rate", "li2018_nu0", "li2020_theta", "li2020_tau0")


class Domain(Handle):
    """A fluid domain.

    ``Domain((64, 64, 64), viscosity=0.01)`` makes a 64^3 periodic box at rest on
    the best backend there is (CUDA if the library has it and a GPU is present,
    else the CPU). Keyword arguments are the fields of acm_domain_options with
    the same defaults; exactly one of ``viscosity`` and ``tau``. Use it as a
    context manager, or call ``close()``, to free its memory (a GPU's too) at a
    known point; otherwise it goes when garbage-collected.
    """

    _kind = "domain"

    def __init__(self, shape: Sequence[int], *, viscosity: Optional[float] = None,
                 tau: Optional[float] = None, collision: enums.EnumLike = "default",
                 backend: enums.EnumLike = "auto", device: int = -1,
                 precision: enums.EnumLike = "default", layout: Optional[Layout] = None,
                 density: float = 1.0, velocity: Sequence[float] = (0.0, 0.0, 0.0),
                 max_speed: float = 0.0, subdomains: int = 0,
                 devices: Optional[Sequence[int]] = None):
        super().__init__()
        self._read_points = 0  # the points of a read begun (sample_velocity_begin)
        nx, ny, nz = (int(v) for v in shape)
        o = _capi.DomainOptions()
        check(fn.acm_domain_options_init(ctypes.byref(o), o.VERSION))
        o.nx, o.ny, o.nz = nx, ny, nz
        o.viscosity = 0.0 if viscosity is None else float(viscosity)
        o.tau = 0.0 if tau is None else float(tau)
        o.collision = enums.as_enum(enums.Collision, collision, "collision")
        o.backend = enums.as_enum(enums.Backend, backend, "backend")
        o.device = int(device)
        o.precision = enums.as_enum(enums.Precision, precision, "precision")
        o.layout = layout.handle.value if layout is not None else None
        o.initial_density = float(density)
        o.initial_velocity[:] = [float(v) for v in velocity]
        o.max_speed = float(max_speed)
        o.subdomains = int(subdomains)
        devs = None
        if devices is not None:
            devs = (ctypes.c_int32 * len(devices))(*devices)
            o.devices = ctypes.cast(devs, ctypes.POINTER(ctypes.c_int32))
        err = ctypes.create_string_buffer(1024)
        o.error_buffer = ctypes.cast(err, ctypes.c_void_p).value
        o.error_buffer_size = len(err)
        check(fn.acm_domain_create(ctypes.byref(self._h), ctypes.byref(o)), lambda: err.value)
        self._adopt()

    @classmethod
    def _wrap(cls, h: ctypes.c_void_p) -> "Domain":
        d = cls.__new__(cls)
        Handle.__init__(d)
        d._h = h
        d._adopt()
        return d

    def _adopt(self) -> None:
        self.live = Liveness()
        self._callbacks: dict[Any, Any] = {}  # ctypes callbacks kept alive while set
        self._pending: list[BaseException] = []  # raised in a callback, re-raised after
        # the Python object of each solid and smoke, while there is one (weak: no cycle,
        # so that a domain dropped by its last reference is freed at once)
        self._members: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
        info = self.info()
        self.grid = (info.nx, info.ny, info.nz)
        self.shape = (info.nz, info.ny, info.nx)

    def _destroy(self, h: ctypes.c_void_p) -> None:
        # its solids and smokes go with it: their Python objects then report closed
        self.live.open = False
        fn.acm_domain_destroy(h)

    def _message(self) -> bytes:
        return fn.acm_domain_last_error(self._h)

    def _run(self, f: Callable[..., int], *args: Any) -> None:
        """A call that may run Python callbacks: an exception raised in one stops the
        call (the callback answered 'cancel') and is raised here in its place."""
        status = f(self._ptr(), *args)
        if status or self._pending:
            self._settle(status)

    def _settle(self, status: int) -> None:
        """After a call that failed or whose callbacks raised: the callback's exception
        first (the call's status follows from it), else the status's."""
        if self._pending:
            exc = self._pending[0]
            self._pending.clear()
            raise exc
        check(status, self._message)

    def __repr__(self) -> str:
        if self.closed:
            return "<acmlbm.Domain closed>"
        i = self.info()
        return (f"<acmlbm.Domain {i.nx}x{i.ny}x{i.nz} {i.backend.name.lower()} "
                f"{i.precision.name.lower()} {i.collision.name.lower()} step {i.step}>")

    # ---- stepping ------------------------------------------------------------------

    def step(self, n: int = 1, *, progress: Optional[Callable[[int, int], Any]] = None,
             every: int = 0) -> int:
        """Advance n steps; returns the steps taken. With ``progress``, the steps run
        in pieces of ``every`` (default n // 100) and progress(done, n) is called after
        each; a true return value stops early (the steps done so far stay). The GIL is
        released while the library steps."""
        n = int(n)
        if progress is None:  # the frame loop's call: as few Python steps as it takes
            h = self._h
            if not h.value:
                self._ptr()  # raises: closed
            status = _acm_step(h, n)
            if status or self._pending:
                self._settle(status)
            return n
        every = max(1, int(every) if every else n // 100)
        done = 0
        while done < n:
            k = min(every, n - done)
            self._run(fn.acm_step, k)
            done += k
            if progress(done, n):
                break
        return done

    def step_async(self, n: int = 1) -> None:
        """CUDA: enqueue n steps on the domain's stream and return (acm_cuda_step_async)."""
        self._call(fn.acm_cuda_step_async, int(n))

    def step_prepare(self, n: int = 1) -> None:
        """CUDA: record now what step_async(n) replays, without stepping (acm_cuda_step_prepare)."""
        self._call(fn.acm_cuda_step_prepare, int(n))

    @property
    def graphs_recorded(self) -> int:
        """CUDA: how many graphs of steps the domain has recorded (acm_cuda_graphs_recorded)."""
        n = ctypes.c_int64()
        self._call(fn.acm_cuda_graphs_recorded, ctypes.byref(n))
        return n.value

    def synchronize(self) -> None:
        """CUDA: wait for the enqueued work and report its outcome."""
        self._call(fn.acm_cuda_domain_synchronize)

    @property
    def stream(self) -> int:
        """CUDA: the domain's stream (a cudaStream_t as an int); set it to run on yours."""
        s = ctypes.c_void_p()
        self._call(fn.acm_cuda_domain_get_stream, ctypes.byref(s))
        return int(s.value or 0)

    @stream.setter
    def stream(self, value: int) -> None:
        self._call(fn.acm_cuda_domain_set_stream, ctypes.c_void_p(int(value)))

    # ---- faces and forces ------------------------------------------------------------

    def set_face(self, face: enums.EnumLike, boundary: enums.EnumLike,
                 velocity: Sequence[float] = (0.0, 0.0, 0.0)) -> None:
        """The condition of one face: periodic, wall (moving with a tangential
        velocity), inlet (with its velocity), outlet or slip."""
        f = enums.as_enum(enums.Face, face, "face")
        b = enums.as_enum(enums.Boundary, boundary, "boundary")
        self._callbacks.pop(("face", f), None)
        self._call(fn.acm_domain_set_face, f, b, _capi.d3(velocity, "velocity"))

    def face(self, face: enums.EnumLike) -> tuple[enums.Boundary, tuple]:
        """(boundary, velocity) of a face."""
        t = ctypes.c_int()
        v = (ctypes.c_double * 3)()
        self._call(fn.acm_domain_get_face, enums.as_enum(enums.Face, face, "face"),
                   ctypes.byref(t), v)
        return enums.Boundary(t.value), tuple(v)

    def set_face_values(self, face: enums.EnumLike, values: Optional[Any]) -> None:
        """Per-cell values of an inlet (velocity, shape (n2, n1, 3)) or an outlet
        (density, shape (n2, n1)), n1 and n2 the face's two other axes, the lower one
        fastest; None goes back to the uniform rule."""
        f = enums.as_enum(enums.Face, face, "face")
        if values is None:
            self._call(fn.acm_domain_set_face_values, f, 2, None, 0)
            return
        a = np.ascontiguousarray(values, dtype=np.float64)
        self._call(fn.acm_domain_set_face_values, f, 2, a.ctypes.data, a.size)

    def set_face_function(self, face: enums.EnumLike,
                          function: Optional[Callable[[int, np.ndarray], Any]]) -> None:
        """Values of an inlet or outlet that change every step: before each step the
        library calls function(step, values), values a float64 array to fill in place,
        every value of it (the layout of set_face_values, flat). An exception raised there stops the step
        and is raised by step(). None removes it."""
        f = enums.as_enum(enums.Face, face, "face")
        if function is None:
            self._call(fn.acm_domain_set_face_function, f, _capi.FACE_VALUES_FN(), None)
            self._callbacks.pop(("face", f), None)
            return
        pending = self._pending

        def trampoline(_d, _face, step, values, count, _user):
            try:
                function(int(step), np.ctypeslib.as_array(values, shape=(count,)))
                return 0
            except BaseException as e:  # noqa: BLE001 -- handed to the caller of step()
                pending.append(e)
                return 1

        cb = _capi.FACE_VALUES_FN(trampoline)
        self._call(fn.acm_domain_set_face_function, f, cb, None)
        self._callbacks[("face", f)] = cb

    def set_absorber(self, face: enums.EnumLike, cells: int, strength: float = 0.5,
                     density: float = 1.0,
                     velocity: Sequence[float] = (0.0, 0.0, 0.0)) -> None:
        """An absorbing layer of ``cells`` cells in front of an inlet or outlet (the
        non-reflecting outlet); cells 0 removes it."""
        self._call(fn.acm_domain_set_face_absorber, enums.as_enum(enums.Face, face, "face"),
                   int(cells), float(strength), float(density), _capi.d3(velocity))

    def absorber(self, face: enums.EnumLike) -> Absorber:
        cells = ctypes.c_int32()
        s, rho = ctypes.c_double(), ctypes.c_double()
        v = (ctypes.c_double * 3)()
        self._call(fn.acm_domain_get_face_absorber, enums.as_enum(enums.Face, face, "face"),
                   ctypes.byref(cells), ctypes.byref(s), ctypes.byref(rho), v)
        return Absorber(cells.value, s.value, rho.value, tuple(v))

    def set_body_force(self, force: Sequence[float]) -> None:
        """A uniform force density, added to the per-cell force field if there is one."""
        self._call(fn.acm_domain_set_body_force, _capi.d3(force, "force"))

    # ---- collision, parameters, divergence -------------------------------------------

    def collision(self) -> dict[str, Any]:
        """The collision model and its parameters (acm_collision_options) as a dict."""
        o = versioned(_capi.CollisionOptions)
        self._call(fn.acm_domain_get_collision, ctypes.byref(o))
        out: dict[str, Any] = {"model": enums.Collision(o.model)}
        for name in _COLLISION_FIELDS:
            v = getattr(o, name)
            out[name] = tuple(v) if isinstance(v, ctypes.Array) else v
        return out

    def set_collision(self, model: enums.EnumLike = "default", **params: Any) -> None:
        """Set the collision model; parameters not given take the library's defaults
        (high_order_rate, bulk_rate, safety_net, max_high_order_rate, li2018_nu0, ...)."""
        o = _capi.CollisionOptions()
        check(fn.acm_collision_options_init(ctypes.byref(o), o.VERSION))
        o.model = enums.as_enum(enums.Collision, model, "collision")
        for name, value in params.items():
            if name not in _COLLISION_FIELDS:
                raise TypeError(f"unknown collision parameter {name!r}: one of "
                                + ", ".join(_COLLISION_FIELDS))
            if isinstance(getattr(o, name), ctypes.Array):
                getattr(o, name)[:] = [float(v) for v in value]
            else:
                setattr(o, name, value)
        self._call(fn.acm_domain_set_collision, ctypes.byref(o))

    def _param(self, p: enums.Param) -> int:
        v = ctypes.c_int64()
        self._call(fn.acm_domain_get_param, p, ctypes.byref(v))
        return v.value

    threads = property(lambda self: self._param(enums.Param.THREADS),
                       lambda self, v: self._call(fn.acm_domain_set_param,
                                                  enums.Param.THREADS, int(v)),
                       doc="CPU worker threads (0: the OpenMP default).")
    divergence_interval = property(
        lambda self: self._param(enums.Param.DIVERGENCE_INTERVAL),
        lambda self, v: self._call(fn.acm_domain_set_param, enums.Param.DIVERGENCE_INTERVAL,
                                   int(v)),
        doc="CUDA: steps between divergence checks of a domain with solids or smoke.")
    ib_iterations = property(
        lambda self: self._param(enums.Param.IB_ITERATIONS),
        lambda self, v: self._call(fn.acm_domain_set_param, enums.Param.IB_ITERATIONS, int(v)),
        doc="Multi-direct-forcing iterations of the immersed boundary, 1 to 16.")
    halo_overlap = property(
        lambda self: self._param(enums.Param.HALO_OVERLAP),
        lambda self, v: self._call(fn.acm_domain_set_param, enums.Param.HALO_OVERLAP, int(v)),
        doc="Slabs: 0 never, 1 where it pays, 2 always overlap the ghost-plane exchange.")

    def set_divergence_policy(self, action: enums.EnumLike = "stop",
                              snapshot_interval: int = 0,
                              callback: Optional[Callable[[DivergenceEvent], Any]] = None
                              ) -> None:
        """What a divergence leads to: "stop" (the default) or "rewind" to the last
        snapshot, taken every snapshot_interval steps; step() raises DivergedError
        either way. callback(event) hears of it first."""
        p = _capi.DivergencePolicy()
        check(fn.acm_divergence_policy_init(ctypes.byref(p), p.VERSION))
        p.action = enums.as_enum(enums.DivergenceAction, action, "divergence action")
        p.snapshot_interval = int(snapshot_interval)
        cb = None
        if callback is not None:
            pending = self._pending

            def trampoline(_d, event, _user):
                e = event.contents
                try:
                    callback(DivergenceEvent(e.step, e.rewound_to,
                                             (e.message or b"").decode(errors="replace")))
                except BaseException as exc:  # noqa: BLE001 -- re-raised by step()
                    pending.append(exc)

            cb = _capi.DIVERGENCE_FN(trampoline)
            p.callback = cb
        self._call(fn.acm_domain_set_divergence_policy, ctypes.byref(p))
        self._callbacks["divergence"] = cb

    # ---- state -------------------------------------------------------------------------

    def init_uniform(self, density: float = 1.0,
                     velocity: Sequence[float] = (0.0, 0.0, 0.0)) -> None:
        """Equilibrium at one density and velocity everywhere; the step count restarts."""
        self._call(fn.acm_domain_init_uniform, float(density), _capi.d3(velocity))

    def init_fields(self, density: Optional[Any] = None,
                    velocity: Optional[Any] = None) -> None:
        """Equilibrium of per-cell density (nz, ny, nx) and velocity (nz, ny, nx, 3);
        None means 1 and 0."""
        cells = int(np.prod(self.shape))
        rho = None if density is None else input_array(density, self.shape, "density",
                                                         np.float64)
        u = None if velocity is None else input_array(velocity, self.shape + (3,),
                                                       "velocity", np.float64)
        self._call(fn.acm_domain_init_fields, 2,
                   None if rho is None else rho.ctypes.data,
                   None if u is None else u.ctypes.data, cells)

    def _get(self, field: enums.Field, comps: int, out: Optional[np.ndarray],
             dtype: Any) -> np.ndarray:
        shape = self.shape + ((comps,) if comps > 1 else ())
        a = output(out, shape, dtype)
        self._call(fn.acm_domain_get_field, field, float_dtype(a.dtype)[1], a.ctypes.data,
                   a.nbytes)
        return a

    def density(self, out: Optional[np.ndarray] = None, dtype: Any = np.float32) -> np.ndarray:
        """Density, shape (nz, ny, nx); into ``out`` if given (its dtype then rules)."""
        return self._get(enums.Field.DENSITY, 1, out, dtype)

    def velocity(self, out: Optional[np.ndarray] = None,
                 dtype: Any = np.float32) -> np.ndarray:
        """Velocity (the half-force velocity of the collision), shape (nz, ny, nx, 3)."""
        return self._get(enums.Field.VELOCITY, 3, out, dtype)

    def force(self, out: Optional[np.ndarray] = None, dtype: Any = np.float32) -> np.ndarray:
        """The force density each cell feels, shape (nz, ny, nx, 3): the per-cell field
        (set_force) plus the body force."""
        return self._get(enums.Field.FORCE, 3, out, dtype)

    def populations(self, out: Optional[np.ndarray] = None,
                    dtype: Any = np.float64) -> np.ndarray:
        """The 27 populations of each cell, shape (nz, ny, nx, 27) (docs/physics.md order)."""
        return self._get(enums.Field.POPULATIONS, 27, out, dtype)

    def _set(self, field: enums.Field, comps: int, values: Any, what: str) -> None:
        a = input_array(values, self.shape + (comps,), what)
        self._call(fn.acm_domain_set_field, field, float_dtype(a.dtype)[1], a.ctypes.data,
                   a.nbytes)

    def set_force(self, force: Optional[Any]) -> None:
        """Set the per-cell force density field (nz, ny, nx, 3); None removes it."""
        if force is None:
            self._call(fn.acm_domain_set_field, enums.Field.FORCE, 2, None, 0)
        else:
            self._set(enums.Field.FORCE, 3, force, "force")

    def set_populations(self, populations: Any) -> None:
        """Restore populations read with populations()."""
        self._set(enums.Field.POPULATIONS, 27, populations, "populations")

    def probe(self, x: int, y: int, z: int) -> tuple[float, tuple]:
        """(density, velocity) of one cell."""
        rho = ctypes.c_double()
        u = (ctypes.c_double * 3)()
        self._call(fn.acm_domain_probe, int(x), int(y), int(z), ctypes.byref(rho), u)
        return rho.value, tuple(u)

    def sample_velocity(self, points: Any) -> np.ndarray:
        """Velocity interpolated at points (n, 3) in lattice units; returns (n, 3)."""
        p = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3)
        out = np.empty_like(p)
        self._call(fn.acm_domain_sample_velocity, p.ctypes.data, len(p), out.ctypes.data)
        return out

    def sample_velocity_begin(self, points: Any) -> None:
        """Queue the read of sample_velocity behind the steps enqueued so far (on a GPU,
        after step_async's); sample_velocity_end collects it. One read at a time."""
        p = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3)
        self._call(fn.acm_domain_sample_velocity_begin, p.ctypes.data, len(p))
        self._read_points = len(p)

    def sample_velocity_end(self) -> np.ndarray:
        """The velocities (n, 3) of the read sample_velocity_begin queued, once it is done."""
        n = self._read_points
        out = np.empty((max(n, 1), 3), np.float64)
        self._call(fn.acm_domain_sample_velocity_end, out.ctypes.data, n)
        self._read_points = 0
        return out

    def stats(self) -> Stats:
        s = versioned(_capi.DomainStats)
        self._call(fn.acm_domain_get_stats, ctypes.byref(s))
        return record(Stats, s)

    def info(self) -> Info:
        s = versioned(_capi.DomainInfo)
        self._call(fn.acm_domain_get_info, ctypes.byref(s))
        return record(Info, s)

    @property
    def layout(self) -> Layout:
        """The layout the domain runs with, every parameter resolved; assign a Layout
        to re-lay the live domain (its state carried over)."""
        out = Layout()
        self._call(fn.acm_domain_get_layout, out.handle)
        return out

    @layout.setter
    def layout(self, value: Layout) -> None:
        self._call(fn.acm_domain_set_layout, value.handle)

    # ---- files -------------------------------------------------------------------------

    def save(self, path: "str | os.PathLike[str]") -> None:
        """Write a checkpoint (atomically: the old file stays until the new one is whole)."""
        self._call(fn.acm_domain_save, os.fsencode(path))

    @classmethod
    def load(cls, path: "str | os.PathLike[str]", *, backend: enums.EnumLike = "auto",
             device: int = -1, layout: Optional[Layout] = None) -> "Domain":
        """A new domain from a checkpoint, with its solids (``solids()``) and smokes
        (``smokes()``)."""
        o = _capi.LoadOptions()
        check(fn.acm_load_options_init(ctypes.byref(o), o.VERSION))
        o.backend = enums.as_enum(enums.Backend, backend, "backend")
        o.device = int(device)
        o.layout = layout.handle.value if layout is not None else None
        err = ctypes.create_string_buffer(1024)
        o.error_buffer = ctypes.cast(err, ctypes.c_void_p).value
        o.error_buffer_size = len(err)
        h = ctypes.c_void_p()
        check(fn.acm_domain_load(ctypes.byref(h), os.fsencode(path), ctypes.byref(o)),
              lambda: err.value)
        return cls._wrap(h)

    def _children(self, f: Callable[..., int]) -> list[ctypes.c_void_p]:
        n = ctypes.c_size_t()
        self._call(f, None, 0, ctypes.byref(n))
        arr = (ctypes.c_void_p * max(1, n.value))()
        self._call(f, arr, n.value, ctypes.byref(n))
        return [ctypes.c_void_p(arr[i]) for i in range(n.value)]

    def solids(self) -> list:
        """The domain's solids, in creation (or checkpoint) order: the Python objects
        made for them, or new ones for those that have none (a loaded checkpoint's)."""
        from .solid import Solid
        return [Solid._of(self, h) for h in self._children(fn.acm_domain_get_solids)]

    def smokes(self) -> list:
        """The domain's smokes, as solids()."""
        from .smoke import Smoke
        return [Smoke._of(self, h) for h in self._children(fn.acm_domain_get_smokes)]

    def export_vti(self, path: "str | os.PathLike[str]",
                   fields: Iterable[enums.EnumLike] = ("density", "velocity")) -> None:
        """Write fields as a VTK image (.vti) for ParaView."""
        self._export(fn.acm_domain_export_vti, path, fields)

    def export_vdb(self, path: "str | os.PathLike[str]",
                   fields: Iterable[enums.EnumLike] = ("density", "velocity")) -> None:
        """Write fields as OpenVDB grids (NotBuiltError without OpenVDB)."""
        self._export(fn.acm_domain_export_vdb, path, fields)

    def _export(self, f: Callable[..., int], path: Any, fields: Iterable[enums.EnumLike]):
        fs = [enums.as_enum(enums.Field, x, "field") for x in fields]
        arr = (ctypes.c_int * max(1, len(fs)))(*fs)
        self._call(f, os.fsencode(path), arr, len(fs))

    # ---- the GPU, without a copy ---------------------------------------------------------

    def device_fields(self) -> tuple:
        """CUDA: (density, velocity) as device arrays owned by the domain, computed on
        its stream: CuPy, PyTorch, JAX and Numba read them without a copy through
        DLPack (``torch.from_dlpack(v)``) or the CUDA array interface
        (``cupy.asarray(v)``). Shapes (nz, ny, nx) and (nz, ny, nx, 3), float32. Each
        call recomputes both into the same memory; a re-layout invalidates them."""
        from .dlpack import DeviceArray
        rho, vel = ctypes.c_void_p(), ctypes.c_void_p()
        self._call(fn.acm_cuda_domain_map_fields, ctypes.byref(rho), ctypes.byref(vel))
        dev, stream = self.info().device, self.stream
        return tuple(DeviceArray(self, p, shape, dev, stream=stream,
                                 synchronize=self.synchronize)
                     for p, shape in ((rho.value, self.shape), (vel.value, self.shape + (3,))))

    # ---- tuning ----------------------------------------------------------------------

    def autotune(self, *, time_budget: float = 0.0, window_steps: int = 0,
                 flags: enums.TuneFlag | int = 0, cache: Optional[str] = None,
                 progress: Optional[Callable[[Any], Any]] = None, apply: bool = False):
        """Measure layouts on this domain (acm_tune.h; its state is put back exactly)
        and return a TuneResult: the best Layout, the summary, every entry; with
        ``apply``, the domain then runs with the best. progress(p) hears of each
        candidate (p.done, p.planned, p.stage, p.candidate, p.candidate_ms,
        p.best_ms); a true return value cancels (CancelledError). ``cache``: a file
        remembering the best layout per scene."""
        from .tune import autotune
        return autotune(self, time_budget, window_steps, flags, cache, progress, apply)


__all__ = ["Domain", "Stats", "Info", "Absorber", "DivergenceEvent", "CancelledError"]
