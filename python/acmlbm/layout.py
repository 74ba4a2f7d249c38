"""Layout: how a domain lays out its memory and which kernels it runs (acm_layout.h):
CSoA group, kernel structure, block size, the immersed-boundary sample order,
streaming, precision and storage. Every parameter defaults to 0, "the backend's
choice"; the autotuner returns the best Layout it measured."""
from __future__ import annotations

import ctypes
from typing import Any, Iterator

from . import enums
from ._capi import LAYOUT_STRING_SIZE, fn
from .errors import check

# parameter name -> (its acm_layout_param, the enum its values come from, or None)
_PARAMS: dict[str, tuple[enums.LayoutParam, Any]] = {
    "csoa_group": (enums.LayoutParam.CSOA_GROUP, None),
    "kernel": (enums.LayoutParam.KERNEL, enums.Kernel),
    "block_size": (enums.LayoutParam.BLOCK_SIZE, None),
    "sample_block": (enums.LayoutParam.SAMPLE_BLOCK, None),
    "sample_order": (enums.LayoutParam.SAMPLE_ORDER, enums.SampleOrder),
    "ib_spread": (enums.LayoutParam.IB_SPREAD, enums.IbSpread),
    "streaming": (enums.LayoutParam.STREAMING, enums.Streaming),
    "precision": (enums.LayoutParam.PRECISION, enums.Precision),
    "storage": (enums.LayoutParam.STORAGE, enums.Storage),
}


class Layout:
    """A memory and kernel layout. ``Layout(kernel="split", block_size=64)``,
    ``Layout.parse("storage=moments")``; read and set parameters as attributes
    (``layout.storage = "moments"``); ``str(layout)`` gives the text form that
    ``parse`` reads back."""

    __slots__ = ("_h",)

    def __init__(self, **params: Any):
        h = ctypes.c_void_p()
        check(fn.acm_layout_create(ctypes.byref(h)))
        object.__setattr__(self, "_h", h)
        for name, value in params.items():
            setattr(self, name, value)

    @classmethod
    def parse(cls, text: str) -> "Layout":
        """A layout from its text form, ``"kernel=split block_size=64"``
        (acm_layout_from_string: unknown keys and bad values raise BadFormatError)."""
        out = cls()
        check(fn.acm_layout_from_string(out._h, text.encode()), out._message)
        return out

    @staticmethod
    def bounds(name: str) -> tuple[int, int]:
        """The admissible (min, max) of an integer parameter."""
        param = _param(name)[0]
        lo, hi = ctypes.c_int64(), ctypes.c_int64()
        check(fn.acm_layout_param_bounds(param, ctypes.byref(lo), ctypes.byref(hi)))
        return lo.value, hi.value

    def _message(self) -> bytes:
        return fn.acm_layout_last_error(self._h)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        param, kind = _param(name)
        v = ctypes.c_int64()
        check(fn.acm_layout_get(self._h, param, ctypes.byref(v)), self._message)
        return kind(v.value) if kind is not None else v.value

    def __setattr__(self, name: str, value: Any) -> None:
        param, kind = _param(name)
        if kind is not None:
            value = enums.as_enum(kind, value, name)
        check(fn.acm_layout_set(self._h, param, int(value)), self._message)

    def items(self) -> Iterator[tuple[str, Any]]:
        """(name, value) of every parameter."""
        for name in _PARAMS:
            yield name, getattr(self, name)

    def __str__(self) -> str:
        buf = ctypes.create_string_buffer(LAYOUT_STRING_SIZE)
        check(fn.acm_layout_to_string(self._h, buf, len(buf)), self._message)
        return buf.value.decode()

    def __repr__(self) -> str:
        return f"Layout.parse({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Layout) and dict(self.items()) == dict(other.items())

    __hash__ = None  # mutable

    def __del__(self) -> None:
        h = getattr(self, "_h", None)
        if h is not None and h.value:
            fn.acm_layout_destroy(h)
            h.value = None

    @property
    def handle(self) -> ctypes.c_void_p:
        """The acm_layout pointer, for C code of your own."""
        return self._h


def _param(name: str) -> tuple[enums.LayoutParam, Any]:
    try:
        return _PARAMS[name]
    except KeyError:
        raise AttributeError(f"Layout has no parameter {name!r}: one of "
                             + ", ".join(_PARAMS)) from None
