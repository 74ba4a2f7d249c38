"""The library's enumerations, with the C values. Wherever the package takes one,
it also takes its name as a string, in any case: ``backend="cuda"``,
``face="x_min"``, ``Boundary.INLET`` and ``2`` are all accepted."""
from __future__ import annotations

import enum
from typing import TypeVar, Union


class Backend(enum.IntEnum):
    AUTO = 0
    CPU = 1
    CUDA = 2


class Precision(enum.IntEnum):
    DEFAULT = 0
    FP32 = 1
    FP64 = 2
    FP16 = 3


class Collision(enum.IntEnum):
    DEFAULT = 0
    BGK = 1
    RM_MRT = 2
    CM_MRT = 3
    ACM_LI2018 = 4
    ACM_LI2020 = 5


class Face(enum.IntEnum):
    X_MIN = 0
    X_MAX = 1
    Y_MIN = 2
    Y_MAX = 3
    Z_MIN = 4
    Z_MAX = 5


class Boundary(enum.IntEnum):
    PERIODIC = 0
    WALL = 1
    INLET = 2
    OUTLET = 3
    SLIP = 4


class Field(enum.IntEnum):
    DENSITY = 1
    VELOCITY = 2
    FORCE = 3
    POPULATIONS = 4


class Param(enum.IntEnum):
    THREADS = 1
    DIVERGENCE_INTERVAL = 2
    IB_ITERATIONS = 3
    HALO_OVERLAP = 4


class DivergenceAction(enum.IntEnum):
    STOP = 0
    REWIND = 1


class Kernel(enum.IntEnum):
    DEFAULT = 0
    FUSED = 1
    SPLIT = 2
    BASELINE = 3


class Streaming(enum.IntEnum):
    DEFAULT = 0
    TWO_ARRAYS = 1
    IN_PLACE = 2


class Storage(enum.IntEnum):
    DEFAULT = 0
    POPULATIONS = 1
    MOMENTS = 2


class SampleOrder(enum.IntEnum):
    DEFAULT = 0
    MORTON_BLOCK = 1
    AS_SAMPLED = 2


class IbSpread(enum.IntEnum):
    DEFAULT = 0
    SCATTER = 1
    GATHER = 2


class LayoutParam(enum.IntEnum):
    CSOA_GROUP = 1
    KERNEL = 2
    BLOCK_SIZE = 3
    SAMPLE_BLOCK = 4
    SAMPLE_ORDER = 5
    IB_SPREAD = 6
    STREAMING = 7
    PRECISION = 8
    STORAGE = 9


class MeshFormat(enum.IntEnum):
    AUTO = 0
    STL = 1
    OBJ = 2


class Motion(enum.IntEnum):
    STATIC = 0
    PRESCRIBED = 1
    FREE = 2


class ParticleFormat(enum.IntEnum):
    PLY = 1
    VTP = 2


class TuneFlag(enum.IntFlag):
    NONE = 0
    EXHAUSTIVE = 1 << 0
    STREAMING = 1 << 1
    PRECISION = 1 << 2
    REFRESH = 1 << 3
    STORAGE = 1 << 4


E = TypeVar("E", bound=enum.IntEnum)
EnumLike = Union[enum.IntEnum, int, str]


def as_enum(cls: type[E], value: EnumLike, what: str) -> E:
    """value as a member of cls: a member, its integer, or its name (any case)."""
    if isinstance(value, cls):
        return value
    if isinstance(value, str):
        try:
            return cls[value.strip().upper().replace("-", "_")]
        except KeyError:
            names = ", ".join(m.name.lower() for m in cls)
            raise ValueError(f"unknown {what} {value!r}: one of {names}") from None
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return cls(value)
        except ValueError:
            pass
    names = ", ".join(m.name.lower() for m in cls)
    raise ValueError(f"unknown {what} {value!r}: one of {names}")
