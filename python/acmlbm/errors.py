"""Exceptions: one class per acm_status of the C library, each carrying the
library's message (what was wrong, with the values) and the status code.

Every class derives from AcmError; where a Python built-in means the same, it
derives from that too (an out-of-range argument is a ValueError, running out
of memory a MemoryError), so ``except ValueError`` catches bad arguments
whichever library raised them.
"""
from __future__ import annotations

from ._capi import fn


class AcmError(Exception):
    """A call into libacmlbm failed. ``status`` is the acm_status code, ``message``
    the library's message for it (``str(e)`` gives both)."""

    status: int = -1

    def __init__(self, message: str, status: int | None = None):
        if status is not None:
            self.status = status
        self.message = message
        super().__init__(message)

    def __str__(self) -> str:
        text = fn.acm_status_string(self.status).decode()
        return f"{self.message} [{text}, status {self.status}]" if self.message else text


class NoMemoryError(AcmError, MemoryError):
    """ACM_ERR_NO_MEMORY (101): out of host memory."""
    status = 101


class DeviceError(AcmError, RuntimeError):
    """ACM_ERR_DEVICE (102): the CUDA runtime or driver failed."""
    status = 102


class NoDeviceError(AcmError, RuntimeError):
    """ACM_ERR_NO_DEVICE (103): no usable CUDA device."""
    status = 103


class DeviceMemoryError(AcmError, MemoryError):
    """ACM_ERR_DEVICE_MEMORY (104): out of device memory."""
    status = 104


class FileError(AcmError, OSError):
    """ACM_ERR_IO (105): a file could not be opened, read or written."""
    status = 105


class InvalidArgumentError(AcmError, ValueError):
    """ACM_ERR_INVALID_ARG (201): invalid or inconsistent arguments."""
    status = 201


class BadStateError(AcmError, RuntimeError):
    """ACM_ERR_BAD_STATE (202): the call is not valid in the object's state (a diverged
    domain, a domain in use by another thread, a call from inside a callback)."""
    status = 202


class BadVersionError(AcmError, ValueError):
    """ACM_ERR_BAD_VERSION (203): an options struct or file format of an unknown version."""
    status = 203


class NullPointerError(AcmError, ValueError):
    """ACM_ERR_NULL_POINTER (204): a required argument was missing."""
    status = 204


class OutOfRangeError(AcmError, ValueError):
    """ACM_ERR_OUT_OF_RANGE (205): a number outside its admissible range."""
    status = 205


class BadEnumError(AcmError, ValueError):
    """ACM_ERR_BAD_ENUM (206): an unknown enumeration value."""
    status = 206


class BufferSizeError(AcmError, ValueError):
    """ACM_ERR_BUFFER_SIZE (207): a buffer does not match the field."""
    status = 207


class BadFormatError(AcmError, ValueError):
    """ACM_ERR_BAD_FORMAT (208): malformed, truncated or inconsistent data (a mesh, a
    checkpoint, a layout text)."""
    status = 208


class LimitError(AcmError, ValueError):
    """ACM_ERR_LIMIT (209): a size limit was exceeded."""
    status = 209


class CancelledError(AcmError):
    """ACM_ERR_CANCELLED (210): a callback asked to stop."""
    status = 210


class UnsupportedError(AcmError, NotImplementedError):
    """ACM_ERR_UNSUPPORTED (301): not supported by this backend or configuration."""
    status = 301


class NotBuiltError(AcmError, NotImplementedError):
    """ACM_ERR_NOT_BUILT (302): the feature is not compiled into this build."""
    status = 302


class DivergedError(AcmError, ArithmeticError):
    """ACM_ERR_DIVERGED (401): the simulation diverged (NaN or a runaway velocity);
    the message names the step and the cell."""
    status = 401


class InternalError(AcmError, RuntimeError):
    """ACM_ERR_INTERNAL (901): an internal error of the library (please report it)."""
    status = 901


_BY_STATUS = {c.status: c for c in (
    NoMemoryError, DeviceError, NoDeviceError, DeviceMemoryError, FileError,
    InvalidArgumentError, BadStateError, BadVersionError, NullPointerError, OutOfRangeError,
    BadEnumError, BufferSizeError, BadFormatError, LimitError, CancelledError,
    UnsupportedError, NotBuiltError, DivergedError, InternalError)}


def error_for(status: int, message: str) -> AcmError:
    """The exception of a failed call: its class by status (AcmError for a code this
    package does not know yet), the library's message."""
    cls = _BY_STATUS.get(status)
    return cls(message) if cls is not None else AcmError(message, status)


def check(status: int, message_of=None) -> None:
    """Raise the exception for status unless it is ACM_OK; message_of() gives the
    handle's message (acm_*_last_error) and is called only on failure."""
    if status != 0:
        msg = message_of() if message_of is not None else b""
        if isinstance(msg, bytes):
            msg = msg.decode(errors="replace")
        raise error_for(status, msg or "")
