"""Live group members: joined, assigned partitions by the group, fenced when they lose them."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from typing import Any, Callable

from mq import _convert as cv
from mq import _lifecycle
from mq._asyncio import poll_copy
from mq._consume import MemberMessages
from mq._handles import BrokerCore, CancelToken, seconds_ms, token
from mq._hooks import report
from mq._native import check, ctx, fail, ffi, lib, poll_buffer
from mq._types import Assignment, Message
from mq._wait import MAIN_IDENT, call_blocking, wait_ms
from mq._wake import Wake
from mq.errors import Closed, Deadlock

__all__ = ["Assignor", "Member", "RebalanceCallback"]

Assignor = Callable[[int, Sequence[str]], Sequence[int]]
"""``assignor(partitions, member_ids) -> owners``: for each partition, the index in member_ids
(join order) of its owner. Called with the group's lock held: it must be fast and pure, and
must not call mq. If it raises or returns something invalid, round robin is used."""

RebalanceCallback = Callable[["Member", int], None]
"""``on_rebalance(member, generation)``, after every rebalance of the member's group (its own
join included), on the thread that caused it. It may call ``member.assignment()``."""

_TIMEOUT = lib.MQ_TIMEOUT
_CANCELLED = lib.MQ_CANCELLED
_TOO_LARGE = lib.MQ_ERR_TOO_LARGE
_AGAIN = -1  # not a status: poll (again)
_in_rebalance = threading.local()  # .member: whose on_rebalance this thread is running


class Member:
    """A member of a consumer group (a context manager: leaving the block leaves the group).

    The group divides the topic's partitions among its members; each change is a new
    generation. A call made after a change raises :class:`mq.Rebalanced` until
    :meth:`assignment` is fetched; a call on a partition the member no longer owns raises
    :class:`mq.Fenced`. Once its topic is deleted, every call but :meth:`close` raises
    :class:`mq.NoSuchTopic`. :meth:`poll_async` and :meth:`ack_poll_async` are the polls as
    coroutines (no thread while they wait); :meth:`close` ends those pending with
    :class:`mq.Closed`."""

    def __init__(self) -> None:
        raise TypeError("use Broker.join(...)")

    @classmethod
    def _join(
        cls,
        broker: BrokerCore,
        topic: str,
        group: str,
        member_id: str | None,
        session_timeout: float,
        assignor: Assignor | None,
        on_rebalance: RebalanceCallback | None,
    ) -> Member:
        self = object.__new__(cls)
        self.topic = topic
        self.group = group
        self._broker = broker
        self._lock = threading.Condition()
        self._busy = 0
        self._tokens = set()
        self._h = ffi.NULL
        self._closing = False
        self._on_rebalance = on_rebalance
        opts = ffi.new("mq_member_options *")
        lib.mq_member_options_init(opts, ffi.sizeof("mq_member_options"))
        keep = None
        if member_id is not None:
            keep = ffi.new("char[]", cv.name(member_id, "member_id"))
            opts.member_id = keep
        opts.session_timeout_ms = seconds_ms(session_timeout, "session_timeout")
        if assignor is not None:
            if not callable(assignor):
                raise TypeError("assignor must be callable")
            # The group may use its first member's assignor after that member left: the handle
            # lives as long as the broker.
            ah = ffi.new_handle(assignor)
            broker._keep.append(ah)
            opts.assignor = lib.mqpy_assignor
            opts.assignor_user = ah
        self._rh = None
        if on_rebalance is not None:
            if not callable(on_rebalance):
                raise TypeError("on_rebalance must be callable")
            self._rh = ffi.new_handle(self)
            opts.on_rebalance = lib.mqpy_rebalance
            opts.on_rebalance_user = self._rh
        broker._adopt(self)
        out = ffi.new("mq_member **")
        c = ctx()
        s = lib.mqw_member_join(
            broker._h, cv.name(topic, "topic"), cv.name(group, "group"), opts, out, c
        )
        if s:
            broker._release(self)
            self._closing = True
            fail(s, c)
        self._h = out[0]
        self.id = ffi.string(lib.mq_member_id(self._h)).decode("utf-8", "replace")
        _lifecycle.hold(self)
        return self

    topic: str
    group: str
    id: str
    """The member's id (generated as ``"<group>-<n>"`` unless given)."""
    _broker: BrokerCore
    _lock: threading.Condition
    _busy: int
    _tokens: set[Any]
    _h: Any
    _closing: bool
    _on_rebalance: RebalanceCallback | None
    _rh: Any

    def __enter__(self) -> Member:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        return self._closing

    # A member's handle is freed by close: calls in progress are counted, and close waits for
    # them (waking blocked polls through their tokens) before it frees.
    def _enter(self) -> Any:
        with self._lock:
            if self._closing or self._h == ffi.NULL:
                raise Closed("the member has left its group (closed)")
            self._busy += 1
            return self._h

    def _leave(self) -> None:
        with self._lock:
            self._busy -= 1
            if self._busy == 0:
                self._lock.notify_all()

    def assignment(self) -> Assignment:
        """The member's generation and partitions; marks the generation as seen."""
        h = self._h if getattr(_in_rebalance, "member", None) is self else self._enter()
        try:
            return self._assignment(h)
        finally:
            if getattr(_in_rebalance, "member", None) is not self:
                self._leave()

    @staticmethod
    def _assignment(h: Any) -> Assignment:
        c = ctx()
        gen = ffi.new("int64_t *")
        count = ffi.new("size_t *")
        cap = 16
        while True:
            parts = ffi.new("int32_t[]", cap)
            check(lib.mqw_member_get_assignment(h, gen, parts, cap, count, c), c)
            if count[0] <= cap:
                return Assignment(gen[0], tuple(ffi.unpack(parts, count[0])))
            cap = count[0]

    def poll(
        self,
        max: int = 10,
        timeout: float | None = None,
        cancel: CancelToken | None = None,
    ) -> list[Message]:
        """Messages of one of the member's partitions (``message.partition`` says which), or
        ``[]`` if nothing came within ``timeout``."""
        return self._poll(max, timeout, cancel, None)

    def ack_poll(
        self,
        partition: int,
        offset: int,
        max: int = 10,
        timeout: float | None = None,
        cancel: CancelToken | None = None,
    ) -> list[Message]:
        """:meth:`ack` of ``offset`` on ``partition``, then :meth:`poll`, in one call into mq
        (mq 1.1). The ack stands whatever the poll then finds (``[]``, :class:`mq.Cancelled`,
        ``KeyboardInterrupt``); a rejected ack (:class:`mq.NotInFlight`, :class:`mq.Fenced`,
        :class:`mq.Rebalanced`) raises and polls nothing."""
        ack = (cv.int32(partition, "partition"), cv.int64(offset, "offset"))
        return self._poll(max, timeout, cancel, ack)

    async def poll_async(
        self,
        max: int = 10,
        timeout: float | None = None,
        cancel: CancelToken | None = None,
    ) -> list[Message]:
        """:meth:`poll` as a coroutine, on mq's asynchronous member poll (mq 1.4): while it
        waits on the member's partitions no thread is used (the broker's one completer thread
        ends it), and the member's session stays alive. It ends as :meth:`poll` does: messages
        of whichever partition got them first, ``[]`` at ``timeout``, :class:`mq.Rebalanced`
        when the group's generation changes meanwhile, :class:`mq.Closed` when the member or
        the broker is closed. Cancelling the task cancels the wait and raises
        ``CancelledError`` (a message it took meanwhile is handed out again when its lease
        ends); ``cancel`` (a :class:`mq.CancelToken`) raises :class:`mq.Cancelled` unless the
        poll ended first."""
        return await self._poll_native(max, timeout, cancel, None)

    async def ack_poll_async(
        self,
        partition: int,
        offset: int,
        max: int = 10,
        timeout: float | None = None,
        cancel: CancelToken | None = None,
    ) -> list[Message]:
        """:meth:`ack_poll` as a coroutine (see :meth:`poll_async`): the ack is made as the
        coroutine starts, before it waits, and stands whatever happens to the poll after (a
        rejected ack raises and polls nothing)."""
        ack = (cv.int32(partition, "partition"), cv.int64(offset, "offset"))
        return await self._poll_native(max, timeout, cancel, ack)

    async def _poll_native(
        self,
        max: int,
        timeout: float | None,
        cancel: CancelToken | None,
        ack: tuple[int, int] | None,
    ) -> list[Message]:
        token(cancel)  # the type check
        n = cv.count(max, "max")
        w = wait_ms(timeout)
        poll = self._native(lib.mqw_member_poll_copy_async)
        first = poll if ack is None else self._native(lib.mqw_member_ack_poll_copy_async, *ack)
        return await poll_copy(
            first,
            poll,
            n,
            w,
            cancel,
            self,  # the broker with it; mq keeps the handle until the call's done
            self.topic,
            # The Kafka engine: the blocking form in the pool; close() wakes it through its token.
            lambda tok: self._poll(n, timeout, tok, ack, wake=True),
        )

    def _native(self, fn: Callable[..., int], *head: Any) -> Callable[..., int]:
        """``fn`` (an ``mqw_member_*_async`` wrapper) with the member's handle and ``head``
        bound. The handle is taken as a call in progress only while the call is started: a
        pending call is mq's to end, which mq_member_close does (MQ_CLOSED) before it frees."""

        def call(*tail: Any) -> int:
            h = self._enter()
            try:
                return int(fn(h, *head, *tail))
            finally:
                self._leave()

        return call

    def consume(self, *, max: int = 64) -> MemberMessages:
        """The member's messages as an async iterator, on the asynchronous member poll, acked
        when the caller says; see :class:`mq.MemberMessages`."""
        return MemberMessages(self, max)

    def _closing_now(self) -> bool:
        return self._closing

    def _poll(
        self,
        max: int,
        timeout: float | None,
        cancel: CancelToken | None,
        ack: tuple[int, int] | None,
        *,
        wake: bool = False,
    ) -> list[Message]:
        # wake: cancel is the binding's own (poll_async's in the pool): close() may wake the
        # poll through it. A caller's own token is left alone: close() does not wake its poll.
        n = cv.count(max, "max")
        w = wait_ms(timeout)
        tok = token(cancel)
        h = self._enter()
        c = ctx()
        pb = poll_buffer()
        wk = None
        try:
            if w != 0 and (tok is None or wake):
                # A token of its own (linked to the binding's), so close() can wake this poll.
                wk = Wake(cancel, self._closing_now, "the member was closed while it polled")
                tok = wk.ptr
                with self._lock:
                    self._tokens.add(tok)
                    if self._closing:
                        lib.mq_cancel_trigger(tok)
            s = _AGAIN
            if ack is not None:
                # Where Ctrl-C must end the wait (the main thread), the ack goes with a look
                # that does not wait, then the wait is a plain poll's, which may be retried
                # after a signal without making the ack twice.
                split = w != 0 and threading.get_ident() == MAIN_IDENT
                s = lib.mqw_member_ack_poll_copy(
                    h,
                    *ack,
                    pb.mem,
                    pb.cap,
                    n,
                    0 if split else w,
                    ffi.NULL if split or tok is None else tok,
                    pb.count,
                    pb.needed,
                    c,
                )
                if split and s == _TIMEOUT:
                    s = _AGAIN
            while s in (_AGAIN, _TOO_LARGE) or (s == _CANCELLED and wk is not None):
                if s == _TOO_LARGE:
                    # Nothing was handed out (after an ack, the ack stands): room, and again.
                    pb.resize(pb.needed[0])
                elif s == _CANCELLED:
                    assert wk is not None
                    # Closed if close() woke it; a signal whose handler did not raise (it
                    # would have): wait again.
                    if not wk.again():
                        break  # the binding's token (poll_async's task was cancelled)
                s = call_blocking(
                    lib.mqw_member_poll_copy,
                    (h, pb.mem, pb.cap, n),
                    w,
                    tok,
                    (pb.count, pb.needed, c),
                    user_token=True,
                    pretry=ack is None,
                    again=None if wk is None else wk.again,
                )
        finally:
            if wk is not None:
                wk.unlink()
                with self._lock:
                    self._tokens.discard(wk.ptr)
            self._leave()
        if s == 0:
            got = cv.messages(pb, self.topic)
            pb.after(len(got), n)
            return got
        if s == _TIMEOUT:
            return []
        fail(s, c)

    def ack(self, partition: int, offset: int) -> None:
        """Acknowledges, cumulatively, up to ``offset`` on a partition the member owns."""
        self._simple(
            lib.mqw_member_ack, cv.int32(partition, "partition"), cv.int64(offset, "offset")
        )

    def nack(self, partition: int, delay: float = 0.0) -> None:
        """Hands the partition's in-flight messages out again (after ``delay`` seconds)."""
        self._simple(
            lib.mqw_member_nack, cv.int32(partition, "partition"), seconds_ms(delay, "delay")
        )

    def extend_lease(self, partition: int) -> None:
        """Restarts the lease of the partition's in-flight messages."""
        self._simple(lib.mqw_member_extend_lease, cv.int32(partition, "partition"))

    def _simple(self, fn: Callable[..., int], *args: Any) -> None:
        h = self._enter()
        try:
            c = ctx()
            s = fn(h, *args, c)
        finally:
            self._leave()
        if s:
            fail(s, c)

    def close(self) -> None:
        """Leaves the group (the others rebalance; what this member had in flight goes to the
        new owners). Raises :class:`mq.Deadlock` from the member's own ``on_rebalance``.
        Idempotent."""
        if getattr(_in_rebalance, "member", None) is self:
            c = ctx()
            check(lib.mqw_member_close(self._h, c), c)
            raise Deadlock("a member cannot be closed from its own on_rebalance")
        with self._lock:
            if self._closing:
                return
            self._closing = True
            for t in self._tokens:
                lib.mq_cancel_trigger(t)
            while self._busy:
                self._lock.wait()
            h, self._h = self._h, ffi.NULL
        _lifecycle.release(self)
        self._broker._release(self)
        if h != ffi.NULL:
            c = ctx()
            check(lib.mqw_member_close(h, c), c)

    def _close_quietly(self) -> None:
        with contextlib.suppress(Deadlock):
            self.close()

    _close_from_broker = _close_quietly

    def _rebalanced(self, member: Any, generation: int) -> None:
        cb = self._on_rebalance
        if cb is None:
            return
        if self._h == ffi.NULL and not self._closing:
            self._h = member  # the call made during the join, before it returns the handle
            self.id = ffi.string(lib.mq_member_id(member)).decode("utf-8", "replace")
        prev = getattr(_in_rebalance, "member", None)
        _in_rebalance.member = self
        try:
            cb(self, generation)
        except BaseException as e:
            report(e, f"on_rebalance of member {getattr(self, 'id', '?')!r} raised")
        finally:
            _in_rebalance.member = prev


def _on_callback_error(exc_type: Any, exc: Any, tb: Any) -> None:
    report(exc if exc is not None else exc_type(), "an mq member callback failed")


@ffi.def_extern(onerror=_on_callback_error)  # type: ignore[untyped-decorator]
def _mqpy_py_rebalance(user: Any, member: Any, generation: int) -> None:
    m: Member = ffi.from_handle(user)
    m._rebalanced(member, generation)


@ffi.def_extern(onerror=_on_callback_error)  # type: ignore[untyped-decorator]
def _mqpy_py_assignor(
    user: Any, partitions: int, member_ids: Any, member_count: int, owner_out: Any
) -> None:
    # owner_out already holds round robin (mqpy_assignor): left as is if anything fails.
    fn: Assignor = ffi.from_handle(user)
    ids = [ffi.string(member_ids[i]).decode("utf-8", "replace") for i in range(member_count)]
    try:
        owners = list(fn(partitions, ids))
        if len(owners) != partitions or not all(type(o) is int for o in owners):
            raise ValueError(
                f"an assignor must return {partitions} int member indices, got {owners!r}"
            )
    except BaseException as e:
        report(e, "the group's assignor failed; round robin is used for this rebalance")
        return
    for p, o in enumerate(owners):
        owner_out[p] = o if -(1 << 31) <= o < (1 << 31) else member_count
