"""Push subscriptions: the library's threads poll, call a Python handler and ack."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from typing import Any, Callable, Optional

from mq import _convert as cv
from mq import _lifecycle
from mq._handles import BrokerCore, seconds_ms
from mq._hooks import report
from mq._native import check, ctx, ffi, lib
from mq._types import Message
from mq.errors import Deadlock

__all__ = ["Handler", "Subscription", "extend_lease", "set_nack_delay"]

Handler = Callable[[Message], Optional[bool]]
"""A push handler: return ``None`` or ``True`` to ack, ``False`` to nack; raising nacks too."""

_current = threading.local()  # .sub: the subscription whose handler this thread is running


def extend_lease() -> None:
    """From inside a push handler: restarts the lease of the messages its loop holds, for work
    that outlives the ack timeout."""
    c = ctx()
    check(lib.mqw_handler_extend_lease(c), c)


def set_nack_delay(seconds: float) -> None:
    """From inside a push handler: if this call then nacks (returns False or raises), the
    message comes back no sooner than ``seconds`` from now."""
    if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and seconds < 0:
        ms = -1  # let mq refuse it with its own message
    else:
        ms = seconds_ms(seconds, "nack delay")
    c = ctx()
    check(lib.mqw_handler_set_nack_delay(ms, c), c)


class Subscription:
    """A push subscription (a context manager: leaving the block closes it).

    For each owned partition a library thread polls ``prefetch`` messages, calls the handler
    for each in order (with the GIL held) and acks it. A handler that returns ``False`` or
    raises nacks: the message and the rest of its batch come again. Exceptions go to the error
    hook (:func:`mq.set_error_hook`), never into the library. Without ``partitions`` the
    subscription is a member of the group (it owns what the group assigns it); with a list it
    claims exactly those partitions.

    A subscription runs until it is closed (``close()``, the ``with`` block, ``Broker.close()``
    or interpreter exit), whether or not it is referenced, as a thread does. If its topic is
    deleted, its handler is no longer called; close it as usual.
    """

    def __init__(self) -> None:
        raise TypeError("use Broker.open_subscription(...)")

    @classmethod
    def _open(
        cls,
        broker: BrokerCore,
        topic: str,
        group: str,
        handler: Handler,
        prefetch: int,
        partitions: Sequence[int] | None,
        session_timeout: float = 10.0,
    ) -> Subscription:
        if not callable(handler):
            raise TypeError(f"handler must be callable, not {type(handler).__name__}")
        self = object.__new__(cls)
        self.topic = topic
        self.group = group
        self._broker = broker
        self._handler = handler
        self._lock = threading.Lock()
        self._h = ffi.NULL
        self._closed = False
        self._before_close = None
        self._on_topic_deleted = None
        t = cv.name(topic, "topic")
        g = cv.name(group, "group")
        opts = ffi.new("mq_subscription_options *")
        lib.mq_subscription_options_init(opts, ffi.sizeof("mq_subscription_options"))
        opts.prefetch = cv.int32(prefetch, "prefetch")
        opts.session_timeout_ms = seconds_ms(session_timeout, "session_timeout")
        parts = None
        if partitions is not None:
            plist = [cv.int32(p, "partition") for p in partitions]
            parts = ffi.new("int32_t[]", plist) if plist else ffi.NULL
            opts.partitions = parts if plist else ffi.new("int32_t[]", 1)
            opts.partition_count = len(plist)
        broker._adopt(self)
        self._handle = ffi.new_handle(self)
        _lifecycle.hold(self)
        out = ffi.new("mq_subscription **")
        c = ctx()
        s = lib.mqw_subscription_open(
            broker._h, t, g, opts, lib.mqpy_handler, self._handle, lib.mqpy_user_free, out, c
        )
        if s:
            # user_free has run (mq.h): the handle is released.
            broker._release(self)
            self._closed = True
            check(s, c)
        self._h = out[0]
        return self

    topic: str
    group: str
    _broker: BrokerCore
    _handler: Handler
    _lock: threading.Lock
    _h: Any
    _closed: bool
    _before_close: Callable[[], None] | None
    _on_topic_deleted: Callable[[], None] | None
    _handle: Any

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stops the loops, waits until no handler of this subscription runs, releases its
        partitions. Raises :class:`mq.Deadlock` when called from the subscription's own handler
        (return from the handler first, or close it from another thread). Idempotent."""
        if getattr(_current, "sub", None) is self:
            c = ctx()
            check(lib.mqw_subscription_close(self._h, c), c)  # mq refuses: MQ_ERR_DEADLOCK
            raise Deadlock("a subscription cannot be closed from its own handler")
        with self._lock:
            h, self._h = self._h, ffi.NULL
            self._closed = True
        if h == ffi.NULL:
            return
        if self._before_close is not None:
            self._before_close()  # wakes handlers that wait on Python (async streams)
        c = ctx()
        s = lib.mqw_subscription_close(h, c)
        self._broker._release(self)
        check(s, c)

    def _close_quietly(self) -> None:
        with contextlib.suppress(Deadlock):
            self.close()

    _close_from_broker = _close_quietly

    def _freed(self) -> None:
        _lifecycle.release(self)

    def _call(self, msg: Any) -> int:
        m = cv.view(msg, self.topic)
        prev = getattr(_current, "sub", None)
        _current.sub = self
        try:
            result = self._handler(m)
        except BaseException as e:
            report(
                e,
                f"push handler for topic {self.topic!r}, group {self.group!r} raised on "
                f"partition {m.partition} offset {m.offset}; the message is nacked",
            )
            return 1
        finally:
            _current.sub = prev
        return 1 if result is False else 0


def _on_callback_error(exc_type: Any, exc: Any, tb: Any) -> None:
    report(exc if exc is not None else exc_type(), "an mq callback failed before user code ran")


@ffi.def_extern(onerror=_on_callback_error, error=1)  # type: ignore[untyped-decorator]
def _mqpy_py_handler(user: Any, msg: Any) -> int:
    # error=1: if anything here raises, the message is nacked (cffi's default 0 would ack it).
    sub: Subscription = ffi.from_handle(user)
    return sub._call(msg)


@ffi.def_extern(onerror=_on_callback_error)  # type: ignore[untyped-decorator]
def _mqpy_py_user_free(user: Any) -> None:
    sub: Subscription = ffi.from_handle(user)
    sub._freed()
