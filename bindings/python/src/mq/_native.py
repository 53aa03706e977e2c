"""The cffi extension, the import-time version check, and per-thread native scratch."""

from __future__ import annotations

import threading
from typing import Any, NoReturn

from mq._mq_cffi import ffi, lib
from mq.errors import error_for

__all__ = ["BUILT_VERSION", "META", "RUNTIME_VERSION", "check", "ctx", "fail", "ffi", "lib"]

# Built for: the header's version. Running: the library's. Compatible when the majors match and
# the runtime minor is >= the built one (mq.h's rule).
BUILT_VERSION: int = lib.MQ_VERSION_NUMBER
RUNTIME_VERSION: int = lib.mq_version_number()


def _check_version(built: int, runtime: int) -> None:
    if built // 1000000 != runtime // 1000000 or runtime % 1000000 < built % 1000000:
        raise ImportError(
            f"mq: this package was built for libmq {built // 1000000}.{built // 1000 % 1000} "
            f"but the library is {ffi.string(lib.mq_version_string()).decode()}; "
            "rebuild the package against this library"
        )


_check_version(BUILT_VERSION, RUNTIME_VERSION)

META: int = lib.mqpy_meta_fields()

_tls = threading.local()


def _new_ctx() -> Any:
    c = lib.mqpy_ctx_new()
    if c == ffi.NULL:
        raise MemoryError("mq: no memory for the thread's native scratch")
    c = ffi.gc(c, lib.mqpy_ctx_free)
    _tls.ctx = c
    return c


def ctx() -> Any:
    """This thread's scratch: error text and copy buffers (one per thread: calls release the
    GIL, so two threads never share one)."""
    try:
        return _tls.ctx
    except AttributeError:
        return _new_ctx()


def fail(status: int, c: Any) -> NoReturn:
    """Raises the exception for a failed call whose wrapper wrote its message into c."""
    raise error_for(status, ffi.string(c.err).decode("utf-8", "replace"))


def check(status: int, c: Any) -> None:
    if status:
        fail(status, c)
