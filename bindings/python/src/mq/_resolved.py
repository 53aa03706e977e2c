"""Publishers and cursors (mq 1.7): a topic, or a group's partition of a topic, looked up once,
so that their calls skip the name lookups of the broker's named forms."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any, Callable

from mq import _calls as calls
from mq import _convert as cv
from mq._handles import BrokerCore, CancelToken, token
from mq._native import check, ctx, fail, ffi, lib
from mq._types import Bytes, Message
from mq._wait import wait_ms
from mq._wake import Wake
from mq.errors import Closed

__all__ = ["Cursor", "Publisher"]

_NULL = ffi.NULL


class _Resolved:
    """The gate of a native handle. mq must not free a handle while a call on it runs, and a
    close must never wait (``__del__`` must not block): calls in progress are counted, and the
    handle is freed by whichever of :meth:`close` and the last running call comes last. A call
    that may wait does so on a token of its own (:class:`mq._wake.Wake`, kept in ``_waits``
    while it runs), which :meth:`close` triggers: the call raises :class:`mq.Closed` and, the
    last out, frees the handle."""

    _what = "handle"
    _h: Any
    _lock: threading.Lock
    _busy: int
    _closed: bool
    _waits: set[Any]

    def __init__(self) -> None:
        raise TypeError(f"use Broker.{self._what}(...)")

    @staticmethod
    def _free(h: Any) -> None:
        raise NotImplementedError

    def _adopt_handle(self, h: Any) -> None:
        self._h = h
        self._lock = threading.Lock()
        self._busy = 0
        self._closed = False
        self._waits = set()

    def _enter(self) -> Any:
        with self._lock:
            if self._closed:
                raise Closed(f"the {self._what} is closed")
            self._busy += 1
            return self._h

    def _wake(self, timeout: float | None, cancel: CancelToken | None) -> Wake | None:
        """For a call that :meth:`_enter` let in: the token it waits on, which :meth:`close`
        triggers (at once if the close came in between), or None if it does not wait."""
        token(cancel)  # the type check, before the caller's token is linked
        if wait_ms(timeout) == 0:
            return None
        wake = Wake(cancel, self._closing, f"the {self._what} was closed while it waited")
        with self._lock:
            self._waits.add(wake.ptr)
            if self._closed:
                lib.mq_cancel_trigger(wake.ptr)
        return wake

    def _closing(self) -> bool:
        return self._closed

    def _leave(self, wake: Wake | None = None) -> None:
        if wake is not None:
            wake.unlink()
        with self._lock:
            if wake is not None:
                self._waits.discard(wake.ptr)
            self._busy -= 1
            if self._busy or not self._closed:
                return
            h, self._h = self._h, _NULL
        self._free(h)

    def close(self) -> None:
        """Frees the handle; later calls raise :class:`mq.Closed`. A call waiting on another
        thread (a cursor's poll for messages, a publish for room) wakes and raises
        :class:`mq.Closed`, whatever its ``cancel`` token; close does not wait for it, and the
        handle goes when the last call running on it returns. Idempotent; closing the broker
        first or after is safe."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for t in self._waits:
                lib.mq_cancel_trigger(t)
            if self._busy:
                return
            h, self._h = self._h, _NULL
        self._free(h)

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        # No call is running: each holds a reference to this object.
        h = getattr(self, "_h", _NULL)
        if h != _NULL:
            self._h = _NULL
            try:
                self._free(h)
            except Exception:  # interpreter teardown: nothing left to report to
                pass


def _opened(cls: type[Any], open_fn: Callable[..., int], out_type: str, *args: Any) -> Any:
    out = ffi.new(out_type)
    c = ctx()
    check(open_fn(*args, out, c), c)
    self = object.__new__(cls)
    self._adopt_handle(out[0])
    return self


class Publisher(_Resolved):
    """A topic's publisher (mq 1.7, :meth:`Broker.publisher`): :meth:`publish` and
    :meth:`publish_many` are the broker's, without the topic's lookup on every call. A context
    manager; thread-safe (share it, or open one per thread). :meth:`close` ends a publish
    waiting for room on another thread with :class:`mq.Closed`.

    It holds its topic, not the name: once the topic is deleted its calls raise
    :class:`mq.NoSuchTopic`, even if a topic of that name is created again (open a new
    publisher for that one). It does not keep the broker open: once the broker is closed or
    collected, its calls raise :class:`mq.Closed` until it is closed."""

    _what = "publisher"
    topic: str

    @staticmethod
    def _free(h: Any) -> None:
        lib.mq_publisher_close(h)

    @classmethod
    def _open(cls, broker: BrokerCore, topic: str) -> Publisher:
        t = cv.name(topic, "topic")
        self: Publisher = _opened(cls, lib.mqw_publisher_open, "mq_publisher **", broker._h, t)
        self.topic = topic
        return self

    def publish(
        self,
        value: Bytes,
        key: Bytes | None = None,
        headers: Iterable[tuple[Bytes, Bytes]] | None = None,
        timeout: float | None = None,
        cancel: CancelToken | None = None,
        *,
        delay: float = 0.0,
    ) -> tuple[int, int]:
        """:meth:`Broker.publish` on the publisher's topic: returns ``(partition, offset)``. A
        publish waiting for room raises :class:`mq.Closed` when the publisher is closed."""
        h = self._enter()
        wake = None
        try:
            wake = self._wake(timeout, cancel)
            return calls.publish(
                lib.mqw_publisher_publish,
                lib.mqpy_publisher_publish_many,
                (h,),
                value,
                key,
                headers,
                timeout,
                cancel,
                delay,
                wake,
            )
        finally:
            self._leave(wake)

    def publish_many(
        self,
        records: Iterable[calls.PublishItem],
        timeout: float | None = None,
        cancel: CancelToken | None = None,
        *,
        delay: float = 0.0,
    ) -> list[tuple[int, int]]:
        """:meth:`Broker.publish_many` on the publisher's topic (the same records, results and
        partial failures). A batch waiting for room raises :class:`mq.Closed` when the
        publisher is closed, with the ``results`` and ``published`` of what went in."""
        h = self._enter()
        wake = None
        try:
            wake = self._wake(timeout, cancel)
            return calls.publish_many(
                lib.mqpy_publisher_publish_many, (h,), records, timeout, cancel, delay, wake
            )
        finally:
            self._leave(wake)


class Cursor(_Resolved):
    """A group's position on one partition of a topic (mq 1.7, :meth:`Broker.cursor`):
    :meth:`poll`, :meth:`ack` and :meth:`ack_poll` are the broker's on that partition, without
    the lookups on every call. It moves the group's one position: a cursor and the broker's
    named calls on the same partition see each other's polls and acks. A context manager;
    thread-safe. Share groups work through it too (settle with :meth:`Broker.settle`).
    :meth:`close` ends a poll waiting on another thread with :class:`mq.Closed`.

    It holds its topic and group, not their names: once the topic is deleted its calls raise
    :class:`mq.NoSuchTopic`, once the group is unsubscribed :class:`mq.NoSuchGroup`, even if
    one of that name comes back. It does not keep the broker open: once the broker is closed
    or collected, its calls raise :class:`mq.Closed` (a waiting poll at once) until it is
    closed."""

    _what = "cursor"
    topic: str
    group: str
    partition: int

    @staticmethod
    def _free(h: Any) -> None:
        lib.mq_cursor_close(h)

    @classmethod
    def _open(cls, broker: BrokerCore, topic: str, group: str, partition: int) -> Cursor:
        t = cv.name(topic, "topic")
        g = cv.name(group, "group")
        p = cv.int32(partition, "partition")
        self: Cursor = _opened(cls, lib.mqw_cursor_open, "mq_cursor **", broker._h, t, g, p)
        self.topic, self.group, self.partition = topic, group, p
        return self

    def poll(
        self, max: int = 10, timeout: float | None = None, cancel: CancelToken | None = None
    ) -> list[Message]:
        """:meth:`Broker.poll` of the cursor's partition: up to ``max`` messages, or ``[]`` if
        nothing came within ``timeout``. A poll waiting for messages raises :class:`mq.Closed`
        when the cursor is closed."""
        h = self._enter()
        wake = None
        try:
            wake = self._wake(timeout, cancel)
            return calls.poll(
                lib.mqw_cursor_poll_copy, (h,), self.topic, max, timeout, cancel, wake
            )
        finally:
            self._leave(wake)

    def ack_poll(
        self,
        offset: int,
        max: int = 10,
        timeout: float | None = None,
        cancel: CancelToken | None = None,
    ) -> list[Message]:
        """:meth:`Broker.ack_poll` of the cursor's partition: :meth:`ack` of ``offset``, then
        :meth:`poll`, in one call into mq. A close while it waits raises :class:`mq.Closed`
        (the ack stands)."""
        h = self._enter()
        wake = None
        try:
            wake = self._wake(timeout, cancel)
            return calls.ack_poll(
                lib.mqw_cursor_ack_poll_copy,
                lib.mqw_cursor_poll_copy,
                (h,),
                self.topic,
                offset,
                max,
                timeout,
                cancel,
                wake,
            )
        finally:
            self._leave(wake)

    def ack(self, offset: int) -> None:
        """:meth:`Broker.ack` of the cursor's partition: every offset up to ``offset``."""
        h = self._enter()
        try:
            c = ctx()
            s = lib.mqw_cursor_ack(h, cv.int64(offset, "offset"), c)
        finally:
            self._leave()
        if s:
            fail(s, c)
