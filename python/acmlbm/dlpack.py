"""Device arrays without a copy: DLPack (``__dlpack__``, ``__dlpack_device__``) and
the CUDA array interface (``__cuda_array_interface__``, version 3, with the
stream), so that PyTorch, CuPy, JAX and Numba read a domain's GPU fields where
they are.

The DLPack capsule is built here with ctypes (the unversioned DLManagedTensor,
which every consumer reads). Its deleter drops the reference the capsule holds
on the array, which holds its domain: a tensor made from it keeps the domain's
memory alive until the tensor goes. Closing the domain explicitly frees that
memory all the same; arrays made before then must not be used after it.
"""
from __future__ import annotations

import ctypes
from ctypes import POINTER, Structure, c_int32, c_int64, c_uint8, c_uint16, c_uint64, c_void_p
from typing import Any, Callable, Optional

from .errors import BadStateError

KDL_CPU = 1
KDL_CUDA = 2
_KDL_FLOAT = 2
_NAME = b"dltensor"


class _DLDevice(Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class _DLDataType(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class _DLTensor(Structure):
    _fields_ = [("data", c_void_p), ("device", _DLDevice), ("ndim", c_int32),
                ("dtype", _DLDataType), ("shape", POINTER(c_int64)),
                ("strides", POINTER(c_int64)), ("byte_offset", c_uint64)]


class _DLManagedTensor(Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", c_void_p),
                             ("deleter", _DELETER)]

_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [c_void_p, ctypes.c_char_p, c_void_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [c_void_p, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = c_void_p
_api.PyCapsule_GetPointer.argtypes = [c_void_p, ctypes.c_char_p]
_api.Py_IncRef.argtypes = [ctypes.py_object]
_api.Py_DecRef.argtypes = [ctypes.py_object]


class _Export:
    """What one capsule keeps alive: the C structs and the array (and so its domain).
    It holds a reference to itself, taken when the capsule is made and dropped by the
    DLPack deleter, whoever calls it (the consumer, or the capsule if never consumed)."""

    def __init__(self, array: "DeviceArray"):
        self.array = array
        self.shape = (c_int64 * len(array.shape))(*array.shape)
        m = _DLManagedTensor()
        t = m.dl_tensor
        t.data = array.ptr
        t.device = _DLDevice(array.device_type, array.device_id)
        t.ndim = len(array.shape)
        t.dtype = _DLDataType(_KDL_FLOAT, 32, 1)
        t.shape = self.shape
        t.strides = None  # C-contiguous
        t.byte_offset = 0
        m.manager_ctx = id(self)
        m.deleter = _deleter
        self.managed = m


def _delete(managed: Any) -> None:
    ctx = managed.contents.manager_ctx
    if ctx:
        managed.contents.manager_ctx = None
        _api.Py_DecRef(ctypes.cast(ctx, ctypes.py_object))


def _capsule_gone(capsule: int) -> None:
    # a capsule never consumed still owns its tensor (a consumed one was renamed)
    if _api.PyCapsule_IsValid(capsule, _NAME):
        p = _api.PyCapsule_GetPointer(capsule, _NAME)
        _delete(ctypes.cast(p, POINTER(_DLManagedTensor)))


_deleter = _DELETER(_delete)
_capsule_destructor = ctypes.CFUNCTYPE(None, c_void_p)(_capsule_gone)


class DeviceArray:
    """A float32 array in device (or host) memory owned by someone else, with the
    shape in C order. Pass it to ``torch.from_dlpack``, ``cupy.from_dlpack`` or
    ``cupy.asarray``, ``jax.dlpack.from_dlpack``, ``numba.cuda.as_cuda_array``."""

    def __init__(self, owner: Any, ptr: int, shape: tuple, device_id: int,
                 device_type: int = KDL_CUDA, stream: int = 0,
                 synchronize: Optional[Callable[[], None]] = None):
        self.owner = owner  # keeps the domain (or whatever owns the memory) alive
        self.ptr = int(ptr)
        self.shape = tuple(int(n) for n in shape)
        self.device_id = int(device_id)
        self.device_type = device_type
        self.stream = int(stream)
        self._synchronize = synchronize
        self.dtype = "float32"

    def _check(self) -> None:
        if getattr(self.owner, "closed", False):
            raise BadStateError("the domain of this device array was closed")

    @property
    def __cuda_array_interface__(self) -> dict:
        self._check()
        if self.device_type != KDL_CUDA:
            raise AttributeError("not a CUDA array")
        # 0 (the legacy default stream) is spelled 1 in version 3 of the interface
        return {"shape": self.shape, "typestr": "<f4", "data": (self.ptr, False),
                "strides": None, "version": 3, "stream": self.stream or 1}

    def __dlpack_device__(self) -> tuple[int, int]:
        return (self.device_type, self.device_id)

    def __dlpack__(self, *, stream: Optional[int] = None, max_version: Any = None,
                   dl_device: Any = None, copy: Optional[bool] = None) -> Any:
        """A DLPack capsule. The values are computed on the domain's stream: unless the
        consumer's ``stream`` is that one (or -1, no synchronisation asked), the domain's
        stream is waited for first."""
        self._check()
        if copy:
            raise BufferError("this array is exported without a copy only")
        if self._synchronize is not None and stream not in (-1, self.stream):
            self._synchronize()
        e = _Export(self)
        _api.Py_IncRef(ctypes.py_object(e))
        return _api.PyCapsule_New(ctypes.addressof(e.managed), _NAME,
                                  ctypes.cast(_capsule_destructor, c_void_p))

    def __repr__(self) -> str:
        where = "cuda" if self.device_type == KDL_CUDA else "cpu"
        return f"<acmlbm.DeviceArray float32 {self.shape} on {where}:{self.device_id}>"
