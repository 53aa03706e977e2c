"""``async for`` over one partition of a group, on the asynchronous poll (mq 1.4)."""

from __future__ import annotations

import collections
from typing import Any

from mq._types import Message
from mq.errors import Closed, NoSuchGroup, NoSuchTopic

__all__ = ["Messages"]


class Messages:
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
        if isinstance(max, bool) or not isinstance(max, int) or max < 1:
            raise ValueError(f"max must be an int >= 1, not {max!r}")
        self._broker = broker
        self._topic = topic
        self._group = group
        self._partition = partition
        self._max = max
        self._taken: collections.deque[Message] = collections.deque()

    def __aiter__(self) -> Messages:
        return self

    async def __anext__(self) -> Message:
        while not self._taken:
            try:
                batch = await self._broker.poll_async(
                    self._topic, self._group, self._partition, self._max, None
                )
            except (Closed, NoSuchGroup, NoSuchTopic):
                raise StopAsyncIteration from None
            self._taken.extend(batch)
        return self._taken.popleft()

    def ack(self, message: Message) -> None:
        """Acks ``message`` and every message of the partition before it (:meth:`Broker.ack`)."""
        self._broker.ack(self._topic, self._group, self._partition, message.offset)
