"""acm_status mapped to exception classes, each carrying the library's message."""
import pytest

import acmlbm
from acmlbm.errors import error_for


def test_every_status_has_its_class_and_builtin_base():
    table = {101: (acmlbm.NoMemoryError, MemoryError), 102: (acmlbm.DeviceError, RuntimeError),
             103: (acmlbm.NoDeviceError, RuntimeError),
             104: (acmlbm.DeviceMemoryError, MemoryError), 105: (acmlbm.FileError, OSError),
             201: (acmlbm.InvalidArgumentError, ValueError),
             202: (acmlbm.BadStateError, RuntimeError),
             203: (acmlbm.BadVersionError, ValueError),
             204: (acmlbm.NullPointerError, ValueError),
             205: (acmlbm.OutOfRangeError, ValueError), 206: (acmlbm.BadEnumError, ValueError),
             207: (acmlbm.BufferSizeError, ValueError),
             208: (acmlbm.BadFormatError, ValueError), 209: (acmlbm.LimitError, ValueError),
             210: (acmlbm.CancelledError, acmlbm.AcmError),
             301: (acmlbm.UnsupportedError, NotImplementedError),
             302: (acmlbm.NotBuiltError, NotImplementedError),
             401: (acmlbm.DivergedError, ArithmeticError),
             901: (acmlbm.InternalError, RuntimeError)}
    for status, (cls, base) in table.items():
        e = error_for(status, "why")
        assert type(e) is cls and isinstance(e, base) and isinstance(e, acmlbm.AcmError)
        assert e.status == status and e.message == "why"
        assert str(e).startswith("why [") and f"status {status}" in str(e)
    unknown = error_for(299, "new")
    assert type(unknown) is acmlbm.AcmError and unknown.status == 299


@pytest.mark.parametrize("kwargs, cls, words", [
    (dict(shape=(0, 4, 4), viscosity=0.1), acmlbm.OutOfRangeError, "grid size 0x4x4"),
    (dict(shape=(4, 4, 4), viscosity=0.1, tau=0.8), acmlbm.InvalidArgumentError, "tau"),
    (dict(shape=(4, 4, 4)), acmlbm.InvalidArgumentError, "viscosity"),
    (dict(shape=(4, 4, 4), viscosity=0.1, precision="fp16", backend="cpu"),
     acmlbm.NotBuiltError, "FP16"),
])
def test_creation_errors_carry_the_library_message(kwargs, cls, words):
    shape = kwargs.pop("shape")
    with pytest.raises(cls) as e:
        acmlbm.Domain(shape, **kwargs)
    assert words.lower() in e.value.message.lower()


def test_names_are_checked_before_the_library():
    with pytest.raises(ValueError, match="unknown face 'top'.*x_min"):
        acmlbm.Domain((4, 4, 4), viscosity=0.1, backend="cpu").set_face("top", "wall")
    with pytest.raises(ValueError, match="unknown boundary"):
        acmlbm.Domain((4, 4, 4), viscosity=0.1, backend="cpu").set_face("x_min", 9)


def test_a_face_velocity_needs_three_components():
    with acmlbm.Domain((4, 4, 4), viscosity=0.1, backend="cpu") as d:
        with pytest.raises(ValueError, match="3 components"):
            d.set_face("x_min", "wall", velocity=(0.1, 0))
