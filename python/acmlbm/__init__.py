"""acmlbm: the libacmlbm lattice Boltzmann solver (D3Q27, ACM-MRT collision, immersed
solids, smoke) from Python, over its C API.

    import acmlbm
    with acmlbm.Domain((64, 64, 64), viscosity=0.01) as d:
        d.set_face("y_max", "wall", velocity=(0.05, 0, 0))
        d.step(1000)
        u = d.velocity()          # numpy, shape (nz, ny, nx, 3)

Fields are numpy arrays on the host, or (CUDA) device arrays that PyTorch, CuPy
and JAX read without a copy (Domain.device_fields). Errors raise the AcmError
subclass of the library's status, with its message. docs/python.md has the rest.
"""
from __future__ import annotations

from ._capi import fn as _fn
from .dlpack import DeviceArray
from .domain import Absorber, DivergenceEvent, Domain, Info, Stats
from .enums import (Backend, Boundary, Collision, DivergenceAction, Face, Field, IbSpread,
                    Kernel, MeshFormat, Motion, ParticleFormat, Precision, SampleOrder,
                    Storage, Streaming, TuneFlag)
from .errors import (AcmError, BadEnumError, BadFormatError, BadStateError, BadVersionError,
                     BufferSizeError, CancelledError, DeviceError, DeviceMemoryError,
                     DivergedError, FileError, InternalError, InvalidArgumentError,
                     LimitError, NoDeviceError, NoMemoryError, NotBuiltError,
                     NullPointerError, OutOfRangeError, UnsupportedError)
from .layout import Layout
from .mesh import Mesh
from .smoke import Smoke, SmokeInfo
from .solid import Solid, SolidInfo, SolidState
from .tune import TuneEntry, TuneProgress, TuneResult, TuneSummary

__version__ = _fn.acm_version_string().decode()
"""The version of the libacmlbm loaded."""


def backend_available(backend: "Backend | str") -> bool:
    """Whether a backend was built and can run here (CUDA: a device is present)."""
    from .enums import as_enum
    return bool(_fn.acm_backend_available(as_enum(Backend, backend, "backend")))


def vdb_available() -> bool:
    """Whether OpenVDB export works here (the writer module found and loadable)."""
    return bool(_fn.acm_vdb_available())


__all__ = [
    "Domain", "Stats", "Info", "Absorber", "DivergenceEvent", "Layout", "Mesh", "Solid",
    "SolidState", "SolidInfo", "Smoke", "SmokeInfo", "DeviceArray", "TuneResult",
    "TuneEntry", "TuneProgress", "TuneSummary", "Backend", "Boundary", "Collision",
    "DivergenceAction", "Face", "Field", "IbSpread", "Kernel", "MeshFormat", "Motion",
    "ParticleFormat", "Precision", "SampleOrder", "Storage", "Streaming", "TuneFlag",
    "AcmError", "BadEnumError", "BadFormatError", "BadStateError", "BadVersionError",
    "BufferSizeError", "CancelledError", "DeviceError", "DeviceMemoryError",
    "DivergedError", "FileError", "InternalError", "InvalidArgumentError", "LimitError",
    "NoDeviceError", "NoMemoryError", "NotBuiltError", "NullPointerError",
    "OutOfRangeError", "UnsupportedError", "backend_available", "vdb_available",
    "__version__",
]
