"""``async for`` over a group's partition or a member's partitions, on the asynchronous polls
(mq 1.4)."""

from __future__ import annotations

import collections
from typing import Any

from mq._types import Message, Settle
from mq.errors import Closed, NoSuchGroup, NoSuchTopic, Rebalanced

__all__ = ["MemberMessages", "Messages"]


class _Batches:
    """Polls up to ``max`` messages at a time (one asynchronous poll, ``_poll``) and hands them
    out one by one; ends when the poll raises :class:`mq.Closed`, :class:`mq.NoSuchGroup` or
    :class:`mq.NoSuchTopic`."""

    def __init__(self, max: int) -> None:
        if isinstance(max, bool) or not isinstance(max, int) or max < 1:
            raise ValueError(f"max must be an int >= 1, not {max!r}")
        self._max = max
        self._taken: collections.deque[Message] = collections.deque()

    async def _poll(self) -> list[Message]:
        raise NotImplementedError

    async def __anext__(self) -> Message:
        while not self._taken:
            try:
                batch = await self._poll()
            except (Closed, NoSuchGroup, NoSuchTopic):
                raise StopAsyncIteration from None
            self._taken.extend(batch)
        return self._taken.popleft()


class Messages(_Batches):
    """The group's messages of one partition as they come::

        async for message in broker.consume("orders", "billing", 0):
            await handle(message)
            broker.ack("orders", "billing", 0, message.offset)

    Each wait is mq's asynchronous poll (:meth:`Broker.poll_async`): no thread while it waits,
    and cancelling the task ends it. Up to ``max`` messages are taken per poll and handed out
    one by one. The caller acks when its work is done (:meth:`ack`, or :meth:`Broker.ack`; acks
    are cumulative), so at-least-once holds: what it took and did not ack stays in flight, and a
    lease that runs out hands it out again. The iteration ends when the broker closes, the group
    is unsubscribed or the topic is deleted."""

    # broker: the Broker (not imported: _broker imports this module).
    def __init__(self, broker: Any, topic: str, group: str, partition: int, max: int) -> None:
        super().__init__(max)
        self._broker = broker
        self._topic = topic
        self._group = group
        self._partition = partition

    def __aiter__(self) -> Messages:
        return self

    async def _poll(self) -> list[Message]:
        batch: list[Message] = await self._broker.poll_async(
            self._topic, self._group, self._partition, self._max, None
        )
        return batch

    def ack(self, message: Message) -> None:
        """Acks ``message`` and every message of the partition before it (:meth:`Broker.ack`)."""
        self._broker.ack(self._topic, self._group, self._partition, message.offset)

    def settle(self, message: Message, action: Settle, *, delay: float = 0.0) -> None:
        """Settles ``message`` alone, by its offset and delivery count, when the group is a share
        group (mq 1.6; :meth:`Broker.settle`): many workers may then consume one partition,
        each settling what it took."""
        self._broker.settle(
            self._topic,
            self._group,
            self._partition,
            message.offset,
            message.delivery_count,
            action,
            delay=delay,
        )


class MemberMessages(_Batches):
    """A member's messages, of whichever of its partitions they come from::

        async for message in member.consume():
            await handle(message)
            member.ack(message.partition, message.offset)

    :class:`Messages` for a :class:`mq.Member`: each wait is :meth:`Member.poll_async` (no
    thread; the member's session stays alive while it waits), up to ``max`` messages per poll.
    A rebalance does not end the iteration: the iterator fetches the member's new assignment
    (:meth:`Member.assignment`) and polls again, now on the partitions the member owns (use
    ``on_rebalance`` to hear of it). A message handed out before the iterator saw the change
    may be of a partition the member lost: its ack then raises :class:`mq.Fenced` (or
    :class:`mq.Rebalanced` before the iterator saw the change), and the new owner gets it again.
    The iteration ends when the member or the broker is closed, the group is unsubscribed or
    the topic is deleted."""

    # member: the Member (not imported: _member imports this module).
    def __init__(self, member: Any, max: int) -> None:
        super().__init__(max)
        self._member = member

    def __aiter__(self) -> MemberMessages:
        return self

    async def _poll(self) -> list[Message]:
        try:
            batch: list[Message] = await self._member.poll_async(self._max, None)
        except Rebalanced:
            self._member.assignment()  # the new generation, seen: poll again
            return []
        return batch

    def ack(self, message: Message) -> None:
        """Acks ``message`` and every message of its partition before it
        (:meth:`Member.ack`)."""
        self._member.ack(message.partition, message.offset)
