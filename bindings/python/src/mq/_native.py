"""The cffi extension, the import-time version check, and per-thread native scratch."""

from __future__ import annotations

import threading
from typing import Any, NoReturn

from mq._mq_cffi import ffi, lib
from mq.errors import error_for

__all__ = [
    "BUILT_VERSION",
    "RUNTIME_VERSION",
    "TOO_LARGE",
    "PollBuffer",
    "check",
    "ctx",
    "fail",
    "ffi",
    "lib",
    "poll_buffer",
    "publish_out",
]

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

TOO_LARGE: int = lib.MQ_ERR_TOO_LARGE

_tls = threading.local()

# Where a thread's copying polls start (grown on demand): a batch of 64 small messages fits.
_FIRST_CAP = 32 << 10
# Past this a buffer grows only when a single message needs more (MQ_ERR_TOO_LARGE).
_GROW_LIMIT = 64 << 20


class PollBuffer:
    """A thread's buffer for the copying polls (mq.h, layout 1), with their two outputs. Kept
    and grown, never shrunk, so a thread's polls allocate nothing in steady state."""

    __slots__ = ("cap", "count", "i32", "mem", "needed", "q", "raw", "u32")
    cap: int
    q: memoryview[int]
    i32: memoryview[int]
    u32: memoryview[int]

    def __init__(self, cap: int = _FIRST_CAP) -> None:
        self.count = ffi.new("size_t *")
        self.needed = ffi.new("size_t *")
        self.resize(cap)

    def resize(self, cap: int) -> None:
        # uint64_t[]: the 8-byte alignment mq asks for.
        self.mem = ffi.new("uint64_t[]", (cap + 7) // 8)
        self.cap = ffi.sizeof(self.mem)
        # How layout 1 is read (mq._convert.messages): slices of raw are bytes; q, i32 and u32
        # see the same memory as int64, int32 and uint32.
        self.raw = ffi.buffer(self.mem)
        mv = memoryview(self.raw)
        self.q, self.i32, self.u32 = mv.cast("q"), mv.cast("i"), mv.cast("I")

    def after(self, n: int, limit: int) -> None:
        """After a poll that handed out n < limit messages in needed[0] bytes: if another
        message of their average size would not have fitted, the buffer may have been what
        stopped the poll, so the next one gets twice the room."""
        used = self.needed[0]
        if 0 < n < limit and self.cap < _GROW_LIMIT and used + used // n > self.cap:
            self.resize(2 * self.cap)


def publish_out() -> tuple[Any, Any]:
    """This thread's (int32_t *, int64_t *) for where a publish went."""
    try:
        return _tls.publish  # type: ignore[no-any-return]
    except AttributeError:
        out = _tls.publish = (ffi.new("int32_t *"), ffi.new("int64_t *"))
        return out


def poll_buffer() -> PollBuffer:
    """This thread's copying-poll buffer."""
    try:
        return _tls.poll  # type: ignore[no-any-return]
    except AttributeError:
        pb = _tls.poll = PollBuffer()
        return pb


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
