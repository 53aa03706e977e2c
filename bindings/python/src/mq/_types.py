"""Messages, records and introspection results."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple, Union

__all__ = [
    "OFFSET_EARLIEST",
    "OFFSET_END",
    "Assignment",
    "Bytes",
    "DeadLetter",
    "GroupInfo",
    "Header",
    "Message",
    "PartitionInfo",
    "Record",
    "Retention",
    "Settle",
    "ShareMode",
    "Start",
    "TopicInfo",
]

Bytes = Union[bytes, bytearray, memoryview, str]
"""What a key, value or header accepts: bytes-like objects, or ``str`` (encoded as UTF-8)."""

Header = tuple[bytes, bytes]
"""A message header: (name, value), both bytes. A message has an ordered tuple of them."""

OFFSET_END = -1
"""``seek`` target: skip everything retained."""
OFFSET_EARLIEST = -2
"""``seek`` target: replay everything retained."""


class Retention(enum.IntEnum):
    """What a topic does when a partition is full."""

    UNTIL_ACKED = 0
    """The slowest group holds messages; publishers wait (back-pressure). The default."""
    BOUNDED = 1
    """Publishers never wait: the oldest messages are dropped; groups are told of the loss."""


class Start(enum.IntEnum):
    """Where a new group starts."""

    LATEST = 0
    """At the end of the log: it sees what is published after it subscribes. The default."""
    EARLIEST = 1
    """At the oldest retained message."""


class ShareMode(enum.IntEnum):
    """What kind of group ``Broker.subscribe`` makes (mq 1.6, ``mq_group_options.share``)."""

    NONE = 0
    """An ordered group: each partition is handed out in order, under one lease. The default."""
    ALL = 1
    """A share group (a task queue): any number of polls share a partition, each acquiring
    messages no other poll holds, each under its own lock, settled one by one with
    ``Broker.settle``."""
    KEY = 2
    """A key-shared group: a share group that keeps per-key order (a message is not acquired
    while an earlier one with the same key is unsettled)."""


class Settle(enum.IntEnum):
    """How ``Broker.settle`` settles an acquired message of a share group (mq 1.6,
    ``mq_settle``)."""

    ACCEPT = 0
    """Done: never handed out again."""
    RELEASE = 1
    """Hand it out again: at once, or after the settlement's ``delay``."""
    REJECT = 2
    """Never again: to the group's dead-letter topic if it has one, else dropped (counted in
    ``GroupInfo.rejected``)."""
    RENEW = 3
    """Keep it: its lock starts over (the topic's ack timeout)."""


class DeadLetter(NamedTuple):
    """Where a dead-lettered message came from."""

    topic: str
    group: str
    partition: int
    offset: int
    delivery_count: int


class Message(NamedTuple):
    """One message handed out by a poll or to a push handler.

    ``key``, ``value`` and the headers are ``bytes`` copied out of the log in the same native
    call that received them, so a Message stays valid forever, whatever is acked later.
    """

    topic: str
    partition: int
    offset: int
    key: bytes | None
    """``None`` when the message was published without a key (``b""`` is an empty key)."""
    value: bytes
    headers: tuple[Header, ...]
    delivery_count: int
    """How many polls have handed this offset to this group, this one included (1 at first).

    A nack or an expired lease alone does not count; the poll that hands the message out again
    does. In a push subscription, the rest of a polled batch that the loop gives back unseen
    (after a handler raises, or when it stops) does not count, so a failing message never takes
    the ones behind it to the dead-letter topic before a handler saw them."""
    timestamp_ns: int
    """Broker clock (monotonic nanoseconds) when it was published."""
    lost: int
    """Messages of this partition the group lost (dropped before it acked them) since the
    message it was handed before this one. 0 when nothing was lost."""
    dead_letter: DeadLetter | None
    """Set when this message was dead-lettered into this topic: where it came from."""


class Record(NamedTuple):
    """One message to publish with ``publish_many`` when it has a key, headers or a delay of
    its own (a plain bytes value needs no Record).

    ``delay`` (mq 1.5): seconds before any group is handed the message, counted on the broker's
    clock from the publish; ``None`` takes the batch's ``delay=``. The message is appended at
    once; its hand-out waits, and so do the messages behind it in its partition."""

    value: Bytes
    key: Bytes | None = None
    headers: Sequence[tuple[Bytes, Bytes]] | None = None
    delay: float | None = None


@dataclass(frozen=True)
class TopicInfo:
    """A topic's configuration (``Broker.topic_info``)."""

    partitions: int
    capacity: int
    max_bytes: int
    ack_timeout: float
    """Seconds."""
    retention: Retention
    max_age: float | None
    """Seconds; ``None`` when there is no age limit."""


@dataclass(frozen=True)
class PartitionInfo:
    """A partition's state (``Broker.partition_info``)."""

    start: int
    end: int
    backlog: int
    capacity: int
    retained_bytes: int
    max_bytes: int
    producer_waits: int
    max_backlog: int
    dropped: int
    oldest_timestamp_ns: int
    """-1 when the log is empty."""
    oldest_age_ns: int
    """-1 when the log is empty."""


@dataclass(frozen=True)
class GroupInfo:
    """A group's cursor on one partition (``Broker.group_info``)."""

    committed: int
    next: int
    lag: int
    in_flight: int
    lost: int
    dead_lettered: int
    next_age_ns: int
    """-1 when nothing is at ``next``."""
    paused_until_ns: int
    """Broker clock time a delayed nack holds the group until; 0 when not paused."""
    # Since mq 1.6, share groups (0, or -1 for the age, for an ordered group). For a share group
    # ``committed`` is the oldest unsettled offset, ``next`` the first offset no poll has looked
    # at, and ``in_flight`` their difference.
    acquired: int = 0
    """Messages acquired and not settled (their locks still run)."""
    available: int = 0
    """Messages a poll could acquire now."""
    delayed: int = 0
    """Messages not handed out before a later time (a publish delay, a release with a delay)."""
    rejected: int = 0
    """Messages settled with ``Settle.REJECT`` (dead-lettered or dropped)."""
    oldest_unsettled_age_ns: int = -1
    """Age of the oldest unsettled message; -1 when none is."""
    delivered_once: int = 0
    """Unsettled messages handed out once (the delivery-count histogram: once, twice, thrice,
    more)."""
    delivered_twice: int = 0
    delivered_thrice: int = 0
    delivered_more: int = 0
    """Unsettled messages handed out four times or more."""


@dataclass(frozen=True)
class Assignment:
    """A member's partitions in one generation."""

    generation: int
    partitions: tuple[int, ...]
