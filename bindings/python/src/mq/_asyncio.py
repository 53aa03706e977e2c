"""asyncio: awaitable polls and publishes, and an async iterator over a push subscription.

A call that can complete at once does so on the event loop's thread. One that must wait runs
in a thread of the binding's own pool (so waits never occupy the loop's default executor), with
a cancel token: cancelling the task triggers the token, the C call returns at once, and the
task sees ``CancelledError``.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import threading
from collections.abc import Sequence
from typing import Callable, TypeVar

from mq._handles import BrokerCore, CancelToken
from mq._push import Subscription
from mq._types import Message
from mq.errors import Cancelled

__all__ = ["Stream", "run_waiting"]

T = TypeVar("T")

_pool_lock = threading.Lock()
_pool: concurrent.futures.ThreadPoolExecutor | None = None


def _executor() -> concurrent.futures.ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = concurrent.futures.ThreadPoolExecutor(64, thread_name_prefix="mq-async")
        return _pool


async def run_waiting(call: Callable[[CancelToken], T]) -> T:
    """Runs ``call(token)`` in the pool; task cancellation cancels the token (and so the C
    call) and waits for the thread to come back before raising ``CancelledError``."""
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
