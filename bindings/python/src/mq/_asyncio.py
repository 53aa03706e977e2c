"""asyncio: awaitable polls and publishes, and an async iterator over a push subscription.

The awaitable calls are mq's asynchronous calls (mq 1.4, ``mq_*_async``): a call that can
complete at once does so on the event loop's thread; one that must wait is left pending in the
library, with no thread of its own, and the broker's one completer thread calls back
(``mqpy_done`` -> :func:`_mqpy_py_done`) when it ends, which resolves an ``asyncio`` future
through ``loop.call_soon_threadsafe``. What the library writes or reads while the call is
pending (buffers, outputs, names, key, value, headers, the cancel token) belongs to a
:class:`_Call` that the registry ``_calls`` holds until that callback ran, whatever became of
the coroutine. Cancelling the task triggers the call's cancel token and waits for the callback
before ``CancelledError`` goes on. :func:`poll_copy` is the copying poll on top of it that the
broker's and the member's awaitable polls share.

Only the Kafka engine, which has no asynchronous calls (``MQ_ERR_UNSUPPORTED``), still waits in
a thread of the binding's own pool (:func:`run_waiting`); so does :meth:`Stream.aclose`.
"""

from __future__ import annotations

import asyncio
import builtins
import collections
import concurrent.futures
import sys
import threading
from collections.abc import Sequence
from typing import Any, Callable, TypeVar

from mq import _convert as cv
from mq._handles import BrokerCore, CancelToken
from mq._hooks import report
from mq._native import PollBuffer, ctx, ffi, lib
from mq._push import Subscription
from mq._types import Message
from mq.errors import Cancelled, error_for

__all__ = [
    "DONE",
    "PENDING",
    "Stream",
    "pending_calls",
    "poll_buffer",
    "poll_copy",
    "recycle",
    "run_native",
    "run_waiting",
]

T = TypeVar("T")

PENDING: int = lib.MQ_PENDING
DONE: Any = ffi.addressof(lib, "mqpy_done")
_TIMEOUT: int = lib.MQ_TIMEOUT
_TOO_LARGE: int = lib.MQ_ERR_TOO_LARGE
_UNSUPPORTED: int = lib.MQ_ERR_UNSUPPORTED

_pool_lock = threading.Lock()
_pool: concurrent.futures.ThreadPoolExecutor | None = None


def _executor() -> concurrent.futures.ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = concurrent.futures.ThreadPoolExecutor(64, thread_name_prefix="mq-async")
        return _pool


async def run_waiting(call: Callable[[CancelToken], T]) -> T:
    """Runs ``call(token)`` in the pool (the Kafka engine's way: it has no asynchronous calls);
    task cancellation cancels the token (and so the C call) and waits for the thread to come
    back before raising ``CancelledError``."""
    token = CancelToken()
    loop = asyncio.get_running_loop()
    fut = loop.run_in_executor(_executor(), call, token)
    try:
        return await asyncio.shield(fut)
    except asyncio.CancelledError:
        token.cancel()
        try:
            await fut
        except (Cancelled, asyncio.CancelledError):
            pass
        except Exception:  # the call failed anyway; the cancellation wins
            pass
        raise


# ---- mq's asynchronous calls -------------------------------------------------------------------


class _Call:
    """One asynchronous call: what the library may use until its done ran (``keep``), and how
    the done reaches the loop."""

    __slots__ = ("finished", "fut", "handle", "keep", "loop", "message", "status")

    def __init__(self, loop: asyncio.AbstractEventLoop, keep: Any) -> None:
        self.loop = loop
        # Made once the call is pending (on the loop's thread, before resolve can run there).
        self.fut: asyncio.Future[None] | None = None
        self.keep = keep
        self.handle = ffi.new_handle(self)
        self.status = PENDING
        self.message = ""
        self.finished = False

    def resolve(self) -> None:  # on the loop's thread
        if self.fut is not None and not self.fut.done():
            self.fut.set_result(None)


# Every call the library may still complete. The done callback takes its call out; nothing else
# does while the call is pending (not the end of its coroutine, not garbage collection).
_calls: set[_Call] = set()


def pending_calls() -> int:
    """Asynchronous calls the library has not completed yet (for tests)."""
    return len(_calls)


def _on_done_error(exc_type: Any, exc: Any, tb: Any) -> None:
    report(exc if exc is not None else exc_type(), "an mq asynchronous call's completion failed")


@ffi.def_extern(onerror=_on_done_error)  # type: ignore[untyped-decorator]
def _mqpy_py_done(user: Any, status: int, err: Any) -> None:
    # On the broker's completer thread: record, hand over to the loop, never raise into C.
    call: _Call = ffi.from_handle(user)
    if status:
        call.message = ffi.string(err).decode("utf-8", "replace")
    call.status = status
    call.finished = True
    _calls.discard(call)
    try:
        call.loop.call_soon_threadsafe(call.resolve)
    except RuntimeError:  # the loop is closed: nobody awaits the call any more
        pass


async def run_native(
    start: Callable[[Any, Any, Any], int], keep: Any, cancel: CancelToken | None
) -> tuple[int, str]:
    """Starts an asynchronous call, ``start(user, token, ctx)`` (which passes :data:`DONE` and
    ``user`` to the ``mqw_*_async`` wrapper), and returns its ``(status, message)`` once it has
    ended. ``keep`` (with the token) stays referenced until the library is done with it. If the
    task is cancelled, the token is triggered and the call's end awaited before
    ``CancelledError`` goes on."""
    loop = asyncio.get_running_loop()
    tok = _take_token() if cancel is None else cancel
    call = _Call(loop, (keep, tok))
    c = ctx()
    _calls.add(call)  # before the call: its done may run before it returns MQ_PENDING
    try:
        s = start(call.handle, tok._ptr, c)
    except BaseException:
        _calls.discard(call)
        raise
    if s != PENDING:  # done never runs
        _calls.discard(call)
        if cancel is None:
            _give_token(tok)
        return s, ffi.string(c.err).decode("utf-8", "replace") if s else ""
    call.fut = loop.create_future()
    try:
        await call.fut
    except asyncio.CancelledError:
        tok.cancel()
        while not call.finished:
            # The future the done resolves (it reads call.fut when it runs, on this thread).
            call.fut = loop.create_future()
            try:
                await call.fut
            except asyncio.CancelledError:
                pass  # cancelled again: the buffers still wait for the done
        raise
    except GeneratorExit:
        # The coroutine is closed unfinished (its task destroyed with its loop): nobody can
        # await the done, which the registry still waits for; the call need not go on. Not
        # once the interpreter finalizes: the exit's close has ended every call by then, and
        # what the token's finalizer frees may already be gone.
        if not call.finished and not sys.is_finalizing():
            tok.cancel()
        raise
    if cancel is None:
        _give_token(tok)  # the library let go of it with the done
    return call.status, call.message


# Tokens of finished calls that were never triggered, for the next calls (a token costs an
# allocation and a finalizer).
_tokens: list[CancelToken] = []


def _take_token() -> CancelToken:
    try:
        return _tokens.pop()
    except IndexError:
        return CancelToken()


def _give_token(tok: CancelToken) -> None:
    if len(_tokens) < 64:
        _tokens.append(tok)


_spare_lock = threading.Lock()
_spare: list[PollBuffer] = []
_SPARE_MAX = 16
_SPARE_CAP = 1 << 20  # a larger buffer (a rare large message) is not kept


def poll_buffer() -> PollBuffer:
    """A copying-poll buffer of its own for one pending poll (recycled by :func:`recycle`)."""
    with _spare_lock:
        if _spare:
            return _spare.pop()
    # Smaller than a thread's first buffer: many may be pending at once. It grows as a
    # thread's does (PollBuffer.after, and to what a message needs) and is recycled grown.
    return PollBuffer(8 << 10)


def recycle(pb: PollBuffer) -> None:
    with _spare_lock:
        if len(_spare) < _SPARE_MAX and pb.cap <= _SPARE_CAP:
            _spare.append(pb)


async def poll_copy(
    first: Callable[..., int],
    poll: Callable[..., int],
    max: int,
    wait: int,
    cancel: CancelToken | None,
    keep: Any,
    topic: str,
    blocking: Callable[[CancelToken], list[Message]],
) -> list[Message]:
    """A copying poll (a group's or a member's) through mq's asynchronous form.

    ``first`` and ``poll`` are ``mqw_*_poll_copy_async`` wrappers with their leading arguments
    (broker, names, partition; member; the ack's partition and offset) bound, called as
    ``fn(buf, cap, max, wait_ms, cancel, count_out, needed_out, done, user, ctx)``: ``first``
    (the ack-then-poll, or the poll) once, then, while a message needs more room than the buffer
    has (MQ_ERR_TOO_LARGE: nothing handed out, an ack stands), ``poll`` with room for it and
    what is left of the wait. ``keep``: what the names point into, referenced until the call
    ended. ``blocking(token)``: the blocking form, run in the pool where mq has no asynchronous
    calls (the Kafka engine). ``[]`` for MQ_TIMEOUT; other failures raise."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait / 1000 if wait > 0 else None
    pb = poll_buffer()
    fn = first
    while True:

        def start(user: Any, tok: Any, c: Any, fn: Callable[..., int] = fn, w: int = wait) -> int:
            return int(fn(pb.mem, pb.cap, max, w, tok, pb.count, pb.needed, DONE, user, c))

        s, message = await run_native(start, (keep, pb), cancel)
        if s == _UNSUPPORTED:  # the Kafka engine: its blocking poll, in the pool
            recycle(pb)
            return await run_waiting(blocking)
        if s != _TOO_LARGE:
            break
        pb.resize(pb.needed[0])
        fn = poll
        if deadline is not None:
            wait = builtins.max(1, round((deadline - loop.time()) * 1000))
    if s == 0:
        got = cv.messages(pb, topic)
        pb.after(len(got), max)
        recycle(pb)
        return got
    recycle(pb)
    if s == _TIMEOUT:
        return []
    raise error_for(s, message)


class _Slot:
    __slots__ = ("acked", "done", "msg")

    def __init__(self, msg: Message) -> None:
        self.msg = msg
        self.done = threading.Event()
        self.acked = False


class Stream:
    """An async iterator over a push subscription::

        async with broker.stream("orders", "billing") as stream:
            async for message in stream:
                ...

    Each partition's library thread hands its message over and waits until the iterator has
    taken it: at most ``buffer`` messages wait to be taken, and an iterator nobody reads stops
    the subscription from taking more. A message is acked when the iterator hands it out;
    messages still waiting when the stream closes are nacked (delivered again). When its topic
    is deleted (:meth:`Broker.delete_topic`) the iteration ends."""

    def __init__(
        self,
        broker: BrokerCore,
        topic: str,
        group: str,
        *,
        prefetch: int = 10,
        partitions: Sequence[int] | None = None,
        buffer: int = 16,
    ) -> None:
        if isinstance(buffer, bool) or not isinstance(buffer, int) or buffer < 1:
            raise ValueError(f"buffer must be an int >= 1, not {buffer!r}")
        self._broker = broker
        self._args: tuple[str, str, int, Sequence[int] | None] = (
            topic,
            group,
            prefetch,
            partitions,
        )
        self._buffer = buffer
        self._cond = threading.Condition()
        self._pending: collections.deque[_Slot] = collections.deque()
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._sub: Subscription | None = None

    async def __aenter__(self) -> Stream:
        self._start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __aiter__(self) -> Stream:
        if self._sub is None:
            self._start()
        return self

    def _start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        topic, group, prefetch, partitions = self._args
        sub = Subscription._open(self._broker, topic, group, self._handler, prefetch, partitions)
        sub._before_close = self._release_all
        sub._on_topic_deleted = self._topic_deleted
        self._sub = sub

    def _handler(self, msg: Message) -> bool:
        slot = _Slot(msg)
        with self._cond:
            while len(self._pending) >= self._buffer and not self._closed:
                self._cond.wait()
            if self._closed:
                return False
            self._pending.append(slot)
        loop, wake = self._loop, self._wake
        try:
            if loop is None or wake is None:
                raise RuntimeError("no loop")
            loop.call_soon_threadsafe(wake.set)
        except RuntimeError:  # the loop is gone: nobody will take it
            self._release_all()
        slot.done.wait()
        return slot.acked

    def _topic_deleted(self) -> None:
        # No handler is called any more: the iterator ends (what waits in the buffer is of a
        # topic that is gone).
        self._release_all()
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None:
            try:
                loop.call_soon_threadsafe(wake.set)
            except RuntimeError:  # the loop is closed: nobody iterates any more
                pass

    def _release_all(self) -> None:
        with self._cond:
            self._closed = True
            while self._pending:
                self._pending.popleft().done.set()  # acked stays False: nacked
            self._cond.notify_all()

    async def __anext__(self) -> Message:
        wake = self._wake
        assert wake is not None
        while True:
            with self._cond:
                if self._pending:
                    slot = self._pending.popleft()
                    slot.acked = True
                    slot.done.set()
                    self._cond.notify()
                    return slot.msg
                if self._closed:
                    raise StopAsyncIteration
                wake.clear()
            await wake.wait()

    async def aclose(self) -> None:
        """Closes the subscription (without blocking the loop)."""
        self._release_all()
        wake = self._wake
        if wake is not None:
            wake.set()
        sub = self._sub
        if sub is not None and not sub.closed:
            await asyncio.get_running_loop().run_in_executor(_executor(), sub.close)

    @property
    def subscription(self) -> Subscription | None:
        return self._sub
