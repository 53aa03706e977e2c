"""Exceptions: one class per status a caller may want to handle.

Every exception carries the status (``status``, its C constant name in ``status_name``) and the
library's detail message (``message``), read in the same native call as the failure.

Normal outcomes: a poll that finds nothing within its timeout returns an empty list (as
``confluent_kafka.Consumer.consume`` does); a publish that finds the partition still full when
its timeout ends raises :class:`Full` (as ``queue.Queue.put`` raises ``queue.Full``). Ctrl-C
during a blocking call raises ``KeyboardInterrupt``; a call cancelled through a
:class:`~mq.CancelToken` raises :class:`Cancelled`.
"""

from __future__ import annotations

import queue

__all__ = [
    "AlreadyExists",
    "BackendError",
    "BadPartition",
    "Cancelled",
    "Closed",
    "Deadlock",
    "Fenced",
    "Full",
    "InternalError",
    "InvalidArgument",
    "MQError",
    "NoMemory",
    "NoSuchGroup",
    "NoSuchTopic",
    "NotInFlight",
    "OffsetOutOfRange",
    "PartitionOwned",
    "Pending",
    "Rebalanced",
    "TimedOut",
    "TooLarge",
    "UnsupportedError",
]


class MQError(Exception):
    """An mq call failed. ``status`` is the C status value, ``message`` the library's detail."""

    status: int = -1
    status_name: str = "MQ_UNKNOWN_STATUS"

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if status is not None and status != type(self).status:
            self.status = status

    def __str__(self) -> str:
        return f"{self.status_name}: {self.message}" if self.message else self.status_name


class TimedOut(MQError, TimeoutError):
    """MQ_TIMEOUT. Polls return ``[]`` instead; raised only where a timeout has no empty result."""

    status, status_name = 1, "MQ_TIMEOUT"


class Full(MQError, queue.Full):
    """MQ_FULL: the partition was still full when the publish's timeout ended; nothing appended."""

    status, status_name = 2, "MQ_FULL"


class Closed(MQError):
    """MQ_CLOSED: the broker is closed (or was closed while the call waited)."""

    status, status_name = 3, "MQ_CLOSED"


class Cancelled(MQError):
    """MQ_CANCELLED: the call's :class:`~mq.CancelToken` was triggered while it waited."""

    status, status_name = 4, "MQ_CANCELLED"


class Rebalanced(MQError):
    """MQ_REBALANCED: the group's generation changed; call ``member.assignment()`` and go on."""

    status, status_name = 5, "MQ_REBALANCED"


class Pending(MQError):
    """MQ_PENDING (mq 1.4): what an asynchronous call returns while it goes on; the binding's
    awaitables wait for its end instead, so this is never raised by them."""

    status, status_name = 6, "MQ_PENDING"


class InvalidArgument(MQError, ValueError):
    """MQ_ERR_INVALID: a bad value, an illegal name or a bad config."""

    status, status_name = 10, "MQ_ERR_INVALID"


class NoSuchTopic(MQError, LookupError):
    """MQ_ERR_NO_TOPIC."""

    status, status_name = 11, "MQ_ERR_NO_TOPIC"


class NoSuchGroup(MQError, LookupError):
    """MQ_ERR_NO_GROUP: the group is not subscribed to that topic."""

    status, status_name = 12, "MQ_ERR_NO_GROUP"


class AlreadyExists(MQError):
    """MQ_ERR_EXISTS: the topic, group or member id already exists."""

    status, status_name = 13, "MQ_ERR_EXISTS"


class BadPartition(MQError, IndexError):
    """MQ_ERR_PARTITION: partition number out of range."""

    status, status_name = 14, "MQ_ERR_PARTITION"


class TooLarge(MQError, ValueError):
    """MQ_ERR_TOO_LARGE: larger than the broker maximum or the topic's byte budget."""

    status, status_name = 15, "MQ_ERR_TOO_LARGE"


class NotInFlight(MQError):
    """MQ_ERR_NOT_IN_FLIGHT: ack of an offset that is not in flight; the message names the range."""

    status, status_name = 16, "MQ_ERR_NOT_IN_FLIGHT"


class PartitionOwned(MQError):
    """MQ_ERR_OWNED: a partition is owned by another live subscription of the group."""

    status, status_name = 17, "MQ_ERR_OWNED"


class Deadlock(MQError, RuntimeError):
    """MQ_ERR_DEADLOCK: a subscription or member was closed from inside its own callback."""

    status, status_name = 18, "MQ_ERR_DEADLOCK"


class NoMemory(MQError, MemoryError):
    """MQ_ERR_NO_MEMORY: allocation failed; nothing changed."""

    status, status_name = 19, "MQ_ERR_NO_MEMORY"


class InternalError(MQError):
    """MQ_ERR_INTERNAL: a bug in mq; the message says where."""

    status, status_name = 20, "MQ_ERR_INTERNAL"


class OffsetOutOfRange(MQError, IndexError):
    """MQ_ERR_OUT_OF_RANGE: seek outside the retained log; the message names the range."""

    status, status_name = 21, "MQ_ERR_OUT_OF_RANGE"


class Fenced(MQError):
    """MQ_ERR_FENCED: the member does not own that partition now (or was removed)."""

    status, status_name = 22, "MQ_ERR_FENCED"


class UnsupportedError(MQError):
    """MQ_ERR_UNSUPPORTED (mq 1.2): the call or option has no meaning on this broker's backend,
    or the library was built without that backend (the message says how to rebuild it, e.g.
    ``kafka_bootstrap`` on a library without the Kafka backend); nothing was done."""

    status, status_name = 23, "MQ_ERR_UNSUPPORTED"


class BackendError(MQError):
    """MQ_ERR_BACKEND (mq 1.2): the Kafka cluster refused the request or did not answer in
    time; the message carries the cluster's words."""

    status, status_name = 24, "MQ_ERR_BACKEND"


_BY_STATUS: dict[int, type[MQError]] = {
    cls.status: cls
    for cls in (
        TimedOut,
        Full,
        Closed,
        Cancelled,
        Rebalanced,
        Pending,
        InvalidArgument,
        NoSuchTopic,
        NoSuchGroup,
        AlreadyExists,
        BadPartition,
        TooLarge,
        NotInFlight,
        PartitionOwned,
        Deadlock,
        NoMemory,
        InternalError,
        OffsetOutOfRange,
        Fenced,
        UnsupportedError,
        BackendError,
    )
}


def error_for(status: int, message: str) -> MQError:
    """The exception for a status (an unknown one gives a plain MQError carrying it)."""
    cls = _BY_STATUS.get(status)
    if cls is None:
        err = MQError(message, status)
        err.status_name = f"MQ_STATUS_{status}"
        return err
    return cls(message)
