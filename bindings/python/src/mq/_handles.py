"""What the broker, members, subscriptions and streams share: cancel tokens, the manual clock,
second-to-millisecond conversion, and the shape of a broker as they use it.

It sits below every module that holds a broker (``_push``, ``_member``, ``_asyncio``,
``_broker``), so their imports all point down and none of them imports another's module at call
time to dodge a cycle (tests/test_imports.py keeps it so)."""

from __future__ import annotations

from typing import Any, Protocol

from mq import _convert as cv
from mq._native import ffi, lib
from mq.errors import InvalidArgument

__all__ = [
    "BrokerCore",
    "CancelToken",
    "ManualClock",
    "delay_ms",
    "new_token",
    "seconds_ms",
    "token",
]

_NULL = ffi.NULL
_NS = 1_000_000_000


class BrokerCore(Protocol):
    """What a subscription, member or stream needs of the :class:`mq.Broker` it belongs to."""

    _h: Any
    _keep: list[Any]  # handles the group may call until the broker goes

    def _adopt(self, child: Any) -> None: ...

    def _release(self, child: Any) -> None: ...


class ManualClock:
    """A broker clock that moves only when told to (for tests). Read natively, so mq can call it
    with its partition locks held without touching the interpreter."""

    def __init__(self, start_ns: int = _NS) -> None:
        c = lib.mqpy_clock_new(cv.int64(start_ns, "start_ns"))
        if c == _NULL:
            raise MemoryError("mq: no memory for a clock")
        self._c = ffi.gc(c, lib.mqpy_clock_free)

    def now_ns(self) -> int:
        """The clock's time in nanoseconds."""
        return int(lib.mqpy_clock_read(self._c))

    def set_ns(self, now_ns: int) -> None:
        """Sets the time (mq expects it never to go back)."""
        lib.mqpy_clock_set(self._c, cv.int64(now_ns, "now_ns"))

    def advance(self, seconds: float) -> int:
        """Moves the clock forward by ``seconds``; returns the new time in nanoseconds."""
        if seconds < 0:
            raise ValueError("a clock never goes back")
        return int(lib.mqpy_clock_advance(self._c, round(seconds * _NS)))

    def advance_ns(self, ns: int) -> int:
        """Moves the clock forward by ``ns`` nanoseconds; returns the new time."""
        if cv.int64(ns, "ns") < 0:
            raise ValueError("a clock never goes back")
        return int(lib.mqpy_clock_advance(self._c, ns))


class CancelToken:
    """Cancels one blocking call from any thread: pass it as ``cancel=``, then call
    :meth:`cancel`; the call raises :class:`mq.Cancelled` as soon as it would wait. A token
    stays cancelled until :meth:`reset`, and serves one call at a time."""

    def __init__(self) -> None:
        self._ptr = new_token()
        # The tokens of calls on a handle that its close may wake (mq._wake.Wake): such a
        # call waits on a token of its own, which this one triggers when cancelled. Changed
        # and read without a lock (single set operations, atomic under the GIL), so that
        # cancel stays safe from a signal handler.
        self._links: set[Any] = set()

    def cancel(self) -> None:
        """Triggers the token (safe from any thread, handlers included)."""
        lib.mq_cancel_trigger(self._ptr)
        for t in tuple(self._links):
            lib.mq_cancel_trigger(t)

    def reset(self) -> None:
        """Clears a triggered token so it can be used again."""
        lib.mq_cancel_reset(self._ptr)

    @property
    def cancelled(self) -> bool:
        return bool(lib.mq_cancel_is_triggered(self._ptr))


def new_token() -> Any:
    """A native cancel token, freed when collected (mq_cancel_free is safe even while a call
    waits with the token)."""
    out = ffi.new("mq_cancel **")
    if lib.mq_cancel_new(out) != 0:
        raise MemoryError("mq: no memory for a cancel token")
    return ffi.gc(out[0], lib.mq_cancel_free)


def token(cancel: CancelToken | None) -> Any:
    if cancel is None:
        return None
    if not isinstance(cancel, CancelToken):
        raise TypeError(f"cancel must be a CancelToken, not {type(cancel).__name__}")
    return cancel._ptr


def delay_ms(v: float | None) -> int:
    """A publish delay (seconds; ``None`` = none) as mq's ``delay_ms``: rounded to the nearest
    millisecond, a positive delay never below 1 ms and a negative one never above -1 ms. The range
    (0 to 2**40 ms) is mq's to judge: it refuses the record with its own text, naming it."""
    if v is None:
        return 0
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"delay must be a number of seconds, not {type(v).__name__}")
    if v != v:
        raise InvalidArgument("delay is NaN")
    if abs(v) > 1 << 50:  # beyond any int64 of milliseconds mq could be handed
        raise InvalidArgument(f"delay {v} s is outside mq's range of 0 to 2**40 ms")
    ms = round(v * 1000)
    if ms == 0 and v != 0:
        ms = 1 if v > 0 else -1
    return ms


def seconds_ms(v: float | None, what: str, *, none_is: int = 0) -> int:
    if v is None:
        return none_is
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"{what} must be a number of seconds, not {type(v).__name__}")
    if v != v or v < 0:
        raise InvalidArgument(f"{what} must be >= 0 seconds, not {v}")
    ms = round(v * 1000)
    if v > 0 and ms == 0:
        ms = 1
    if ms > 1 << 40:
        raise InvalidArgument(f"{what} {v} s is above mq's limit of 2**40 ms")
    return ms
