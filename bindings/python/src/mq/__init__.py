"""mq: an in-process, Kafka-shaped publish-subscribe log (Python binding of the C library).

Quick start::

    import mq

    with mq.Broker() as broker:
        broker.create_topic("orders", partitions=2)
        broker.subscribe("orders", "billing")
        partition, offset = broker.publish("orders", b"o-1", key=b"user-a")
        for m in broker.poll("orders", "billing", partition, timeout=1.0):
            print(m.offset, m.value)
        broker.ack("orders", "billing", partition, offset)

Timeouts are seconds (``None`` waits forever, ``0`` does not block); every blocking call
releases the GIL and ends on Ctrl-C. Errors are :class:`mq.MQError` subclasses, one per status.
"""

from __future__ import annotations

from mq import _native
from mq._asyncio import Stream
from mq._broker import Broker
from mq._consume import MemberMessages, Messages
from mq._handles import CancelToken, ManualClock
from mq._hooks import ErrorHook, set_error_hook
from mq._lifecycle import close_all
from mq._member import Assignor, Member, RebalanceCallback
from mq._push import Handler, Subscription, extend_lease, set_nack_delay
from mq._resolved import Cursor, Publisher
from mq._types import (
    OFFSET_EARLIEST,
    OFFSET_END,
    Assignment,
    DeadLetter,
    GroupInfo,
    Header,
    Message,
    PartitionInfo,
    Record,
    Retention,
    Settle,
    ShareMode,
    Start,
    TopicInfo,
)
from mq._util import key_partition, murmur2, round_robin
from mq.errors import (
    AlreadyExists,
    BackendError,
    BadPartition,
    Cancelled,
    Closed,
    Deadlock,
    Fenced,
    Full,
    InternalError,
    InvalidArgument,
    MQError,
    NoMemory,
    NoSuchGroup,
    NoSuchTopic,
    NotInFlight,
    OffsetOutOfRange,
    PartitionOwned,
    Rebalanced,
    TimedOut,
    TooLarge,
    UnsupportedError,
)

__version__ = "1.7.0"
LIBRARY_VERSION: str = _native.ffi.string(_native.lib.mq_version_string()).decode()
"""The version of the mq library in use, e.g. ``"1.7.0"``."""

__all__ = [
    "LIBRARY_VERSION",
    "OFFSET_EARLIEST",
    "OFFSET_END",
    "AlreadyExists",
    "Assignment",
    "Assignor",
    "BackendError",
    "BadPartition",
    "Broker",
    "CancelToken",
    "Cancelled",
    "Closed",
    "Cursor",
    "DeadLetter",
    "Deadlock",
    "ErrorHook",
    "Fenced",
    "Full",
    "GroupInfo",
    "Handler",
    "Header",
    "InternalError",
    "InvalidArgument",
    "MQError",
    "ManualClock",
    "Member",
    "MemberMessages",
    "Message",
    "Messages",
    "NoMemory",
    "NoSuchGroup",
    "NoSuchTopic",
    "NotInFlight",
    "OffsetOutOfRange",
    "PartitionInfo",
    "PartitionOwned",
    "Publisher",
    "RebalanceCallback",
    "Rebalanced",
    "Record",
    "Retention",
    "Settle",
    "ShareMode",
    "Start",
    "Stream",
    "Subscription",
    "TimedOut",
    "TooLarge",
    "TopicInfo",
    "UnsupportedError",
    "close_all",
    "extend_lease",
    "key_partition",
    "murmur2",
    "round_robin",
    "set_error_hook",
    "set_nack_delay",
]
