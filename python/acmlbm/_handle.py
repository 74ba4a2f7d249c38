"""What every wrapper of a C handle shares: the pointer, its release, the
"is my domain still there" token, arrays handed to C, and records made from
structs."""
from __future__ import annotations

import ctypes
import dataclasses
from typing import Any, Callable, Optional

import numpy as np

from .errors import BadStateError, check


class Liveness:
    """Shared by a domain and everything made in it (solids, smokes, device views):
    ``open`` turns False when the domain is destroyed, which destroys those too in C.
    A plain object, not a weak reference: the garbage collector clears weak
    references before it runs finalisers, and a solid finalised after its domain
    must know not to free what the domain already freed."""

    __slots__ = ("open",)

    def __init__(self) -> None:
        self.open = True


class Handle:
    """A C handle: ``_h`` (a c_void_p), closed by ``close()``, by leaving a ``with``
    block, or when garbage-collected. A closed object's calls raise BadStateError."""

    _kind = "object"
    # False for what belongs to a domain (solids, smokes): as in C, they stay in it
    # until closed or until the domain goes, whether Python still refers to them or not
    _freed_by_gc = True

    def __init__(self) -> None:
        self._h = ctypes.c_void_p()
        self._parent: Optional[Liveness] = None  # the domain's, for what lives in one

    # set by subclasses
    def _destroy(self, h: ctypes.c_void_p) -> None:
        raise NotImplementedError

    def _message(self) -> bytes:
        return b""

    @property
    def closed(self) -> bool:
        """True once closed, or once the domain it belongs to was closed."""
        return not self._h.value or (self._parent is not None and not self._parent.open)

    def close(self) -> None:
        """Free the C object now (idempotent). What belongs to a domain is freed with it."""
        h = self._h
        if h.value:
            if self._parent is None or self._parent.open:
                self._destroy(h)
            h.value = None

    def __enter__(self):
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        if self._freed_by_gc and getattr(self, "_h", None) is not None:
            self.close()

    def _ptr(self) -> ctypes.c_void_p:
        if self.closed:
            raise BadStateError(f"this {self._kind} is closed"
                                + (" (its domain was closed)" if self._h.value else ""))
        return self._h

    def _call(self, f: Callable[..., int], *args: Any) -> None:
        """f(handle, *args), its status checked; the message is the handle's."""
        check(f(self._ptr(), *args), self._message)

    @property
    def handle(self) -> int:
        """The C pointer (an int), for C code of your own; valid until closed."""
        return int(self._ptr().value)


def float_dtype(dtype: Any) -> tuple[np.dtype, int]:
    """numpy float32 or float64, and its acm_dtype."""
    dt = np.dtype(dtype)
    if dt == np.float32:
        return dt, 1
    if dt == np.float64:
        return dt, 2
    raise TypeError(f"dtype must be float32 or float64, not {dt}")


def output(out: Optional[np.ndarray], shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """out checked (C-contiguous, writeable, the shape, a float dtype), or a new array."""
    if out is None:
        return np.empty(shape, float_dtype(dtype)[0])
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy.ndarray, not {type(out).__name__}")
    float_dtype(out.dtype)
    if out.shape != shape:
        raise ValueError(f"out has shape {out.shape}; this field needs {shape}")
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError("out must be C-contiguous and writeable")
    return out


def input_array(a: Any, shape: tuple[int, ...], what: str,
                dtype: Any = None) -> np.ndarray:
    """a as a C-contiguous float32/float64 array of shape (a copy only if needed);
    a float32 input stays float32, anything else becomes float64."""
    arr = np.asarray(a)
    if dtype is None:
        dtype = np.float32 if arr.dtype == np.float32 else np.float64
    arr = np.ascontiguousarray(arr, dtype=dtype)
    if arr.shape != shape:
        if arr.size == int(np.prod(shape)) and arr.ndim == 1:
            arr = arr.reshape(shape)
        else:
            raise ValueError(f"{what} has shape {np.shape(a)}; it needs {shape}")
    return arr


def record(cls: type, s: ctypes.Structure) -> Any:
    """A dataclass of cls made from the struct's fields of the same names (arrays as
    tuples, C strings as str)."""
    values = {}
    for f in dataclasses.fields(cls):
        v = getattr(s, f.name)
        if isinstance(v, ctypes.Array):  # double[3] and the like (char[] reads as bytes)
            v = tuple(v)
        elif isinstance(v, bytes):
            v = v.decode(errors="replace")
        values[f.name] = v
    return cls(**values)


def versioned(struct_cls: type) -> ctypes.Structure:
    """A struct with its version field set, for a get_* call."""
    s = struct_cls()
    s.version = struct_cls.VERSION
    return s


class Member(Handle):
    """A handle that belongs to a domain (a solid, a smoke): it keeps the domain alive,
    is registered there (one Python object per C object) and is freed with it."""

    _freed_by_gc = False

    def _join(self, domain) -> None:
        self.domain = domain  # keeps the domain alive while this object is
        self._parent = domain.live
        domain._members[self._h.value] = self

    @classmethod
    def _of(cls, domain, h: ctypes.c_void_p):
        """The Python object of C object h of domain: the one there is, or a new one."""
        m = domain._members.get(h.value)
        if m is None:
            m = cls.__new__(cls)
            Handle.__init__(m)
            m._h = h
            m._join(domain)
        return m

    def close(self) -> None:
        """Remove it from its domain and free it now (idempotent)."""
        if self._h.value and self._parent is not None and self._parent.open:
            self.domain._members.pop(self._h.value, None)
        super().close()
