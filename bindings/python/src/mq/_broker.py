"""The broker: topics, groups, publishing, polling, introspection."""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Callable, Union

from mq import _calls as calls
from mq import _convert as cv
from mq import _lifecycle
from mq._asyncio import DONE, Stream, poll_copy, run_native, run_waiting
from mq._consume import Messages
from mq._handles import CancelToken, ManualClock, delay_ms, seconds_ms, token
from mq._member import Assignor, Member, RebalanceCallback
from mq._native import check, ctx, fail, ffi, lib
from mq._push import Handler, Subscription
from mq._resolved import Cursor, Publisher
from mq._types import (
    Bytes,
    GroupInfo,
    Message,
    PartitionInfo,
    Record,
    Retention,
    Settle,
    ShareMode,
    Start,
    TopicInfo,
)
from mq._wait import wait_ms
from mq.errors import Closed, InvalidArgument, MQError, error_for

__all__ = ["Broker"]

_UNSUPPORTED = lib.MQ_ERR_UNSUPPORTED
_NULL = ffi.NULL
_NS = 1_000_000_000

PublishItem = calls.PublishItem
KafkaValue = Union[str, int, bool]
# Sequence, not Iterable: with Iterable, mypy infers a dict of mixed values as dict[str, object].
KafkaConfig = Union[Mapping[str, KafkaValue], Sequence[tuple[str, KafkaValue]]]


class Broker:
    """A broker: the in-process log, or (``kafka_bootstrap``) a Kafka cluster's topics and
    groups. A context manager: leaving the ``with`` block closes it.

    Every method is thread-safe. Blocking methods release the GIL while they wait; their
    ``timeout`` is seconds as a float, ``None`` waits forever, ``0`` does not block.
    """

    def __init__(
        self,
        *,
        max_message_bytes: int | None = None,
        spin: float = 0.0,
        clock: ManualClock | None = None,
        kafka_bootstrap: str | None = None,
        kafka_config: KafkaConfig | None = None,
    ) -> None:
        """``max_message_bytes``: largest key + value + headers accepted (default 1 MiB).
        ``spin``: seconds a poll with nothing to hand out spins before it blocks (default 0).
        ``clock``: a :class:`ManualClock` instead of the system's monotonic clock.

        ``kafka_bootstrap`` (mq 1.2): ``"host:port,..."`` of a Kafka cluster; every call then
        works on that cluster's topics, groups and committed offsets (``None``, the default: the
        in-process log). The constructor waits up to 10 s for the cluster to answer
        (:class:`mq.BackendError` if it does not). A library built without the Kafka backend,
        which is what ``pip install ./bindings/python`` builds, raises
        :class:`mq.UnsupportedError` saying how to rebuild it; so does a ``clock`` with it.

        ``kafka_config``: librdkafka client settings, a mapping (or ``(name, value)`` pairs) such
        as ``{"client.id": "billing", "security.protocol": "ssl"}``; ints and bools are spelled
        as librdkafka reads them. mq takes them as ``name=value`` lines, so a name that is empty
        or contains ``=`` or a newline, and a value containing a newline, cannot be passed and
        raise :class:`mq.InvalidArgument` here; a setting librdkafka rejects raises it from the
        library. Ignored without ``kafka_bootstrap``."""
        self._h: Any = _NULL
        self._closed = False
        self._lock = threading.Lock()
        # Serialises what creates and removes topics and groups: delete_topic tells the children
        # of the topic it deleted, and no new topic of the name may appear meanwhile.
        self._admin = threading.Lock()
        self._children: weakref.WeakSet[Any] = weakref.WeakSet()
        self._keep: list[Any] = []  # assignor handles: the group may call them until the end
        opts = ffi.new("mq_broker_options *")
        lib.mq_broker_options_init(opts, ffi.sizeof("mq_broker_options"))
        if max_message_bytes is not None:
            opts.max_message_bytes = cv.count(max_message_bytes, "max_message_bytes")
        if isinstance(spin, bool) or not isinstance(spin, (int, float)) or not spin >= 0:
            raise InvalidArgument(f"spin must be >= 0 seconds, not {spin!r}")
        opts.spin_ns = round(spin * _NS)
        if clock is not None:
            if not isinstance(clock, ManualClock):
                raise TypeError(f"clock must be a ManualClock, not {type(clock).__name__}")
            opts.clock = lib.mqpy_clock_read
            opts.clock_user = clock._c
        self._clock = clock
        # Referenced until mq_broker_new returns, which copies them.
        bootstrap = config = _NULL
        if kafka_bootstrap is not None:
            bootstrap = ffi.new("char[]", cv.kafka_bootstrap(kafka_bootstrap))
            opts.kafka_bootstrap = bootstrap
        lines = cv.kafka_config(kafka_config)
        if lines is not None:
            config = ffi.new("char[]", lines)
            opts.kafka_config = config
        out = ffi.new("mq_broker **")
        c = ctx()
        status = lib.mqw_broker_new(opts, out, c)
        del bootstrap, config
        check(status, c)
        self._h = out[0]
        _lifecycle.register_broker(self)

    # ---- lifetime ----------------------------------------------------------------------------

    def __enter__(self) -> Broker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Closes the broker: its push subscriptions and members are closed, every waiting call
        raises :class:`mq.Closed`, and so do later calls (except introspection). Idempotent, and
        safe from a handler (its own subscription is then closed when the handler returns and
        the subscription is closed or the program exits)."""
        with self._lock:
            self._closed = True
            children = list(self._children)
        if self._h != _NULL:
            # First: it wakes every wait (a member's poll with the caller's own cancel token
            # too, which the member's close could not wake) and never blocks on handlers.
            lib.mq_broker_close(self._h)
        for child in children:
            child._close_from_broker()

    @property
    def closed(self) -> bool:
        return self._closed

    def __del__(self) -> None:
        # Nothing can be using the handle any more: every Subscription, Member and pending call
        # holds a reference to this object. Freeing it never waits for a handler.
        h = getattr(self, "_h", _NULL)
        if h != _NULL:
            self._h = _NULL
            try:
                lib.mq_broker_free(h)
            except Exception:  # interpreter teardown: nothing left to report to
                pass

    def _adopt(self, child: Any) -> None:
        with self._lock:
            if self._closed:
                raise Closed("the broker is closed")
            self._children.add(child)

    def _release(self, child: Any) -> None:
        with self._lock:
            self._children.discard(child)

    # ---- topics and groups -------------------------------------------------------------------

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        capacity: int = 1024,
        *,
        max_bytes: int = 0,
        ack_timeout: float = 30.0,
        retention: Retention = Retention.UNTIL_ACKED,
        max_age: float | None = None,
    ) -> None:
        """Creates a topic. ``capacity``: messages retained per partition; ``max_bytes``: a byte
        budget per partition (0: none); ``ack_timeout``: lease length in seconds; ``max_age``:
        seconds after which messages are trimmed whatever the groups (None: no limit)."""
        cfg = ffi.new("mq_topic_config *")
        lib.mq_topic_config_init(cfg, ffi.sizeof("mq_topic_config"))
        cfg.partitions = cv.int32(partitions, "partitions")
        cfg.capacity = cv.int64(capacity, "capacity")
        cfg.max_bytes = cv.int64(max_bytes, "max_bytes")
        cfg.ack_timeout_ms = seconds_ms(ack_timeout, "ack_timeout")
        cfg.retention = cv.int32(int(retention), "retention")
        cfg.max_age_ms = seconds_ms(max_age, "max_age")
        t = cv.name(name, "topic")
        c = ctx()
        with self._admin:
            s = lib.mqw_topic_create(self._h, t, cfg, c)
        check(s, c)

    def delete_topic(self, name: str) -> None:
        """Deletes a topic (mq 1.1); the name is free when this returns, and
        :meth:`create_topic` then makes a new, empty topic of that name.

        What used the topic: publishes and polls waiting on it (in any thread) raise
        :class:`mq.NoSuchTopic`, and so do later calls naming it; its members' calls raise
        :class:`mq.NoSuchTopic` (``close()`` works as usual); its push subscriptions stop calling
        their handlers (a running handler finishes; ``close()`` works as usual) and its
        :class:`mq.Stream` iterators end. Messages already polled are copies: they stay valid.
        Raises :class:`mq.NoSuchTopic` if there is no such topic. Safe from a push handler."""
        t = cv.name(name, "topic")
        c = ctx()
        gone: list[Any] = []
        with self._admin:
            s = lib.mqw_topic_delete(self._h, t, c)
            if s == 0:
                # Under _admin no new topic of the name can exist yet: these were all on it.
                with self._lock:
                    gone = [ch for ch in self._children if getattr(ch, "topic", None) == name]
        check(s, c)
        for child in gone:
            hook = getattr(child, "_on_topic_deleted", None)
            if hook is not None:
                hook()

    def subscribe(
        self,
        topic: str,
        group: str,
        *,
        start: Start = Start.LATEST,
        max_deliveries: int = 0,
        dead_letter_topic: str | None = None,
        share: ShareMode = ShareMode.NONE,
        max_acquired: int = 0,
    ) -> None:
        """Subscribes a consumer group to a topic (its cursors start at the end of the log, or at
        the oldest retained message with ``Start.EARLIEST``). With ``max_deliveries`` and
        ``dead_letter_topic``, a message handed out that many times without an ack moves to the
        dead-letter topic.

        ``share`` (mq 1.6): ``ShareMode.ALL`` makes a share group, a task queue: any number of
        polls share a partition, each acquiring up to ``max`` messages no other poll holds,
        each under its own lock (the topic's ack timeout), settled one by one with
        :meth:`settle`; ``ShareMode.KEY`` also keeps per-key order. ``max_acquired``, share
        groups only: at most this many messages of a partition are acquired at once (0 = mq's
        default of 2000). Push subscriptions and members refuse a share group
        (:class:`mq.InvalidArgument`), the Kafka backend any (:class:`mq.UnsupportedError`)."""
        opts = ffi.new("mq_group_options *")
        lib.mq_group_options_init(opts, ffi.sizeof("mq_group_options"))
        opts.start = cv.int32(int(start), "start")
        md = cv.int64(max_deliveries, "max_deliveries")
        if not 0 <= md < 1 << 32:
            raise InvalidArgument(f"max_deliveries {md} is out of range")
        opts.max_deliveries = md
        opts.share = cv.int32(int(share), "share")
        ma = cv.int64(max_acquired, "max_acquired")
        if not 0 <= ma < 1 << 32:
            raise InvalidArgument(f"max_acquired {ma} is out of range")
        opts.max_acquired = ma
        keep = None
        if dead_letter_topic is not None:
            keep = ffi.new("char[]", cv.name(dead_letter_topic, "dead_letter_topic"))
            opts.dead_letter_topic = keep
        t = cv.name(topic, "topic")
        g = cv.name(group, "group")
        c = ctx()
        with self._admin:
            s = lib.mqw_group_subscribe(self._h, t, g, opts, c)
        check(s, c)

    def unsubscribe(self, topic: str, group: str) -> None:
        """Removes a group: its cursors go and what only it held back is trimmed. Its polls
        waiting in other threads raise :class:`mq.NoSuchGroup`, and so do its members' calls (a
        waiting member poll at once); their rebalance callbacks are not called any more. Close
        its members and push subscriptions as usual."""
        t = cv.name(topic, "topic")
        g = cv.name(group, "group")
        c = ctx()
        with self._admin:
            s = lib.mqw_group_unsubscribe(self._h, t, g, c)
        check(s, c)

    def topics(self) -> list[str]:
        """Topic names in creation order."""
        return self._list(lambda buf, cap, need, c: lib.mqw_topic_list(self._h, buf, cap, need, c))

    def groups(self, topic: str) -> list[str]:
        """Group names of a topic in subscription order."""
        t = cv.name(topic, "topic")
        return self._list(
            lambda buf, cap, need, c: lib.mqw_group_list(self._h, t, buf, cap, need, c)
        )

    def _list(self, call: Callable[[Any, int, Any, Any], int]) -> list[str]:
        text = self._text(call)
        return text.split("\n")[:-1] if text else []

    @staticmethod
    def _text(call: Callable[[Any, int, Any, Any], int]) -> str:
        c = ctx()
        need = ffi.new("size_t *")
        cap = 256
        while True:
            buf = ffi.new("char[]", cap)
            check(call(buf, cap, need, c), c)
            if need[0] <= cap:
                return str(ffi.string(buf).decode("utf-8", "replace"))
            cap = need[0]

    # ---- publishing --------------------------------------------------------------------------

    def publish(
        self,
        topic: str,
        value: Bytes,
        key: Bytes | None = None,
        headers: Iterable[tuple[Bytes, Bytes]] | None = None,
        timeout: float | None = None,
        cancel: CancelToken | None = None,
        *,
        delay: float = 0.0,
    ) -> tuple[int, int]:
        """Appends one message and returns ``(partition, offset)``.

        ``key`` picks the partition (Kafka's partitioner); ``None`` means no key (round-robin),
        ``b""`` is an empty key. ``headers``: (name, value) pairs. Waits up to ``timeout`` while
        the partition is full, then raises :class:`mq.Full` with nothing appended.

        ``delay`` (mq 1.5, seconds): no group is handed the message before the broker's clock
        reaches the publish time + delay. It is appended (and counted) at once, and holds the
        messages behind it in its partition until it is due. mq refuses a delay below 0 or
        above 2**40 ms (:class:`mq.InvalidArgument`), the Kafka backend any delay
        (:class:`mq.UnsupportedError`)."""
        t = cv.name(topic, "topic")
        return calls.publish(
            lib.mqw_topic_publish,
            lib.mqpy_publish_many,
            (self._h, t),
            value,
            key,
            headers,
            timeout,
            cancel,
            delay,
        )

    def publish_many(
        self,
        topic: str,
        records: Iterable[PublishItem],
        timeout: float | None = None,
        cancel: CancelToken | None = None,
        *,
        delay: float = 0.0,
    ) -> list[tuple[int, int]]:
        """Appends a batch in one call into mq and returns ``(partition, offset)`` per record.

        A record is a value (bytes or str), a ``(key, value)`` or ``(key, value, headers)``
        tuple, or a :class:`mq.Record`. Records of one partition are appended in order. If the
        batch stops part-way (:class:`mq.Full`, :class:`mq.Closed`, ...), the exception's
        ``results`` has offset -1 for every record not appended and ``published`` counts the
        others; an invalid record fails the whole batch with nothing appended.

        ``delay`` (mq 1.5, seconds) delays every record that does not carry a delay of its own
        (:attr:`mq.Record.delay`); see :meth:`publish`. A bad delay fails the batch with mq's
        text, which names the record."""
        t = cv.name(topic, "topic")
        return calls.publish_many(
            lib.mqpy_publish_many, (self._h, t), records, timeout, cancel, delay
        )

    # ---- handles (mq 1.7) ---------------------------------------------------------------------

    def publisher(self, topic: str) -> Publisher:
        """A :class:`mq.Publisher` of ``topic``: :meth:`publish` and :meth:`publish_many`
        without the topic's lookup on every call. Raises as they would for the name
        (:class:`mq.InvalidArgument`, :class:`mq.NoSuchTopic`, :class:`mq.Closed`)."""
        return Publisher._open(self, topic)

    def cursor(self, topic: str, group: str, partition: int) -> Cursor:
        """A :class:`mq.Cursor` on ``group``'s ``partition`` of ``topic``: :meth:`poll`,
        :meth:`ack` and :meth:`ack_poll` without the lookups on every call. Raises as they would
        for the names (:class:`mq.NoSuchTopic`, :class:`mq.NoSuchGroup`,
        :class:`mq.BadPartition`, ...)."""
        return Cursor._open(self, topic, group, partition)

    # ---- pull consumption --------------------------------------------------------------------

    def poll(
        self,
        topic: str,
        group: str,
        partition: int,
        max: int = 10,
        timeout: float | None = None,
        cancel: CancelToken | None = None,
    ) -> list[Message]:
        """Hands out up to ``max`` messages of one partition to a group and starts their lease.

        Returns ``[]`` if nothing came within ``timeout``. The messages are copies: they stay
        valid after the ack."""
        t = cv.name(topic, "topic")
        g = cv.name(group, "group")
        p = cv.int32(partition, "partition")
        return calls.poll(lib.mqw_group_poll_copy, (self._h, t, g, p), topic, max, timeout, cancel)

    def ack_poll(
        self,
        topic: str,
        group: str,
        partition: int,
        offset: int,
        max: int = 10,
        timeout: float | None = None,
        cancel: CancelToken | None = None,
    ) -> list[Message]:
        """:meth:`ack` of ``offset``, then :meth:`poll` of the same partition, in one call into
        mq (mq 1.1): the loop of a consumer that acks what it handled and asks for more.

        The ack comes first and stands whatever the poll then finds: ``[]`` when nothing came
        within ``timeout``, :class:`mq.Cancelled`, ``KeyboardInterrupt``. A rejected ack raises
        :class:`mq.NotInFlight` (as :meth:`ack`) and polls nothing."""
        t = cv.name(topic, "topic")
        g = cv.name(group, "group")
        p = cv.int32(partition, "partition")
        return calls.ack_poll(
            lib.mqw_group_ack_poll_copy,
            lib.mqw_group_poll_copy,
            (self._h, t, g, p),
            topic,
            offset,
            max,
            timeout,
            cancel,
        )

    def ack(self, topic: str, group: str, partition: int, offset: int) -> None:
        """Acknowledges, cumulatively, every offset up to and including ``offset``."""
        c = ctx()
        s = lib.mqw_group_ack(
            self._h,
            cv.name(topic, "topic"),
            cv.name(group, "group"),
            cv.int32(partition, "partition"),
            cv.int64(offset, "offset"),
            c,
        )
        if s:
            fail(s, c)

    def nack(self, topic: str, group: str, partition: int, delay: float = 0.0) -> None:
        """Hands the in-flight messages out again, no sooner than ``delay`` seconds from now."""
        c = ctx()
        s = lib.mqw_group_nack(
            self._h,
            cv.name(topic, "topic"),
            cv.name(group, "group"),
            cv.int32(partition, "partition"),
            seconds_ms(delay, "delay"),
            c,
        )
        if s:
            fail(s, c)

    def extend_lease(self, topic: str, group: str, partition: int) -> None:
        """Restarts the lease of the group's in-flight messages on a partition."""
        c = ctx()
        s = lib.mqw_group_extend_lease(
            self._h,
            cv.name(topic, "topic"),
            cv.name(group, "group"),
            cv.int32(partition, "partition"),
            c,
        )
        if s:
            fail(s, c)

    def settle(
        self,
        topic: str,
        group: str,
        partition: int,
        offset: int,
        delivery_count: int,
        action: Settle,
        *,
        delay: float = 0.0,
    ) -> None:
        """Settles one message a poll of share group ``group`` acquired (mq 1.6): ``offset``
        and ``delivery_count`` are the message's as the poll handed it out
        (:attr:`Message.offset`, :attr:`Message.delivery_count`); the delivery count proves the
        acquisition is still the current one. ``action``: ``Settle.ACCEPT`` (done),
        ``Settle.RELEASE`` (hand it out again, no sooner than ``delay`` seconds from now),
        ``Settle.REJECT`` (to the group's dead-letter topic, or dropped) or ``Settle.RENEW``
        (its lock starts over). Only a release takes a ``delay``. Settlements may come in any
        order, from any thread; never blocks.

        Raises :class:`mq.NotInFlight` when that acquisition does not hold the message (never
        handed out, settled, released, its lock ran out, or acquired again since: the message
        says which), :class:`mq.InvalidArgument` for a group that is not a share group, an
        unknown action or a delay with another action than release."""
        c = ctx()
        dc = cv.int64(delivery_count, "delivery_count")
        if not 0 <= dc < 1 << 32:
            raise InvalidArgument(f"delivery_count {dc} is out of range")
        s = lib.mqw_share_settle(
            self._h,
            cv.name(topic, "topic"),
            cv.name(group, "group"),
            cv.int32(partition, "partition"),
            cv.int64(offset, "offset"),
            dc,
            cv.int32(int(action), "action"),
            seconds_ms(delay, "delay"),
            c,
        )
        if s:
            fail(s, c)

    def seek(self, topic: str, group: str, partition: int, offset: int) -> None:
        """Moves the group's cursor to ``offset``, ``mq.OFFSET_EARLIEST`` or ``mq.OFFSET_END``."""
        c = ctx()
        s = lib.mqw_group_seek(
            self._h,
            cv.name(topic, "topic"),
            cv.name(group, "group"),
            cv.int32(partition, "partition"),
            cv.int64(offset, "offset"),
            c,
        )
        if s:
            fail(s, c)

    # ---- introspection -----------------------------------------------------------------------

    def topic_info(self, topic: str) -> TopicInfo:
        out = ffi.new("mq_topic_info *")
        c = ctx()
        check(
            lib.mqw_topic_get_info(
                self._h, cv.name(topic, "topic"), out, ffi.sizeof("mq_topic_info"), c
            ),
            c,
        )
        return TopicInfo(
            partitions=out.partitions,
            capacity=out.capacity,
            max_bytes=out.max_bytes,
            ack_timeout=out.ack_timeout_ms / 1000.0,
            retention=Retention(out.retention),
            max_age=out.max_age_ms / 1000.0 if out.max_age_ms else None,
        )

    def partition_info(self, topic: str, partition: int) -> PartitionInfo:
        out = ffi.new("mq_partition_info *")
        c = ctx()
        check(
            lib.mqw_partition_get_info(
                self._h,
                cv.name(topic, "topic"),
                cv.int32(partition, "partition"),
                out,
                ffi.sizeof("mq_partition_info"),
                c,
            ),
            c,
        )
        return PartitionInfo(
            start=out.start,
            end=out.end,
            backlog=out.backlog,
            capacity=out.capacity,
            retained_bytes=out.retained_bytes,
            max_bytes=out.max_bytes,
            producer_waits=out.producer_waits,
            max_backlog=out.max_backlog,
            dropped=out.dropped,
            oldest_timestamp_ns=out.oldest_timestamp_ns,
            oldest_age_ns=out.oldest_age_ns,
        )

    def group_info(self, topic: str, group: str, partition: int) -> GroupInfo:
        out = ffi.new("mq_group_info *")
        c = ctx()
        check(
            lib.mqw_group_get_info(
                self._h,
                cv.name(topic, "topic"),
                cv.name(group, "group"),
                cv.int32(partition, "partition"),
                out,
                ffi.sizeof("mq_group_info"),
                c,
            ),
            c,
        )
        return GroupInfo(
            committed=out.committed,
            next=out.next,
            lag=out.lag,
            in_flight=out.in_flight,
            lost=out.lost,
            dead_lettered=out.dead_lettered,
            next_age_ns=out.next_age_ns,
            paused_until_ns=out.paused_until_ns,
            acquired=out.acquired,
            available=out.available,
            delayed=out.delayed,
            rejected=out.rejected,
            oldest_unsettled_age_ns=out.oldest_unsettled_age_ns,
            delivered_once=out.delivered_once,
            delivered_twice=out.delivered_twice,
            delivered_thrice=out.delivered_thrice,
            delivered_more=out.delivered_more,
        )

    def describe(self, topic: str, partition: int) -> str:
        """A partition as the reference trace prints it, e.g.
        ``"log 1..3, backlog 3/3; billing 1/4; email 3/3"``."""
        t = cv.name(topic, "topic")
        p = cv.int32(partition, "partition")
        return self._text(
            lambda buf, cap, need, c: lib.mqw_partition_describe(self._h, t, p, buf, cap, need, c)
        )

    # ---- push and members --------------------------------------------------------------------

    def open_subscription(
        self,
        topic: str,
        group: str,
        handler: Handler,
        *,
        prefetch: int = 10,
        partitions: Sequence[int] | None = None,
        session_timeout: float = 10.0,
    ) -> Subscription:
        """Starts a push subscription: library threads (one per owned partition) poll, call
        ``handler(message)`` and ack. See :class:`mq.Subscription`.

        ``session_timeout`` (mq 1.3), seconds from 0.001 to 2**40 ms: as :meth:`join`'s, for
        the member a subscription without ``partitions`` is. On Kafka it bounds how long a
        crashed process's partitions stay with it before the group moves them; in-process the
        membership lives exactly as long as the subscription, so the value is only checked.
        Out of range raises :class:`mq.InvalidArgument`."""
        return Subscription._open(
            self, topic, group, handler, prefetch, partitions, session_timeout
        )

    # ---- asyncio -----------------------------------------------------------------------------

    async def poll_async(
        self,
        topic: str,
        group: str,
        partition: int,
        max: int = 10,
        timeout: float | None = None,
        cancel: CancelToken | None = None,
    ) -> list[Message]:
        """:meth:`poll` as a coroutine, on mq's asynchronous poll (mq 1.4): while it waits, no
        thread is used (the broker's one completer thread ends it). Cancelling the task cancels
        the wait and raises ``CancelledError`` (a message it took meanwhile is handed out again
        when its lease ends); ``cancel`` (a :class:`mq.CancelToken`) raises :class:`mq.Cancelled`
        unless the poll ended first."""
        return await self._poll_native(topic, group, partition, None, max, timeout, cancel)

    async def ack_poll_async(
        self,
        topic: str,
        group: str,
        partition: int,
        offset: int,
        max: int = 10,
        timeout: float | None = None,
        cancel: CancelToken | None = None,
    ) -> list[Message]:
        """:meth:`ack_poll` as a coroutine (see :meth:`poll_async`): the ack is made as the
        coroutine starts, before it waits, and stands whatever happens to the poll after (a
        rejected ack raises :class:`mq.NotInFlight` and polls nothing)."""
        return await self._poll_native(topic, group, partition, offset, max, timeout, cancel)

    async def _poll_native(
        self,
        topic: str,
        group: str,
        partition: int,
        offset: int | None,
        max: int,
        timeout: float | None,
        cancel: CancelToken | None,
    ) -> list[Message]:
        token(cancel)  # the type check
        # Names of their own: the library reads them until the call ends.
        tn = ffi.new("char[]", cv.name(topic, "topic"))
        gn = ffi.new("char[]", cv.name(group, "group"))
        p = cv.int32(partition, "partition")
        n = cv.count(max, "max")
        w = wait_ms(timeout)
        poll = functools.partial(lib.mqw_group_poll_copy_async, self._h, tn, gn, p)
        if offset is None:
            return await poll_copy(
                poll,
                poll,
                n,
                w,
                cancel,
                (self, tn, gn),
                topic,
                lambda tok: self.poll(topic, group, p, n, timeout, tok),
            )
        o = cv.int64(offset, "offset")
        return await poll_copy(
            functools.partial(lib.mqw_group_ack_poll_copy_async, self._h, tn, gn, p, o),
            poll,
            n,
            w,
            cancel,
            (self, tn, gn),
            topic,
            lambda tok: self.ack_poll(topic, group, p, o, n, timeout, tok),
        )

    async def publish_async(
        self,
        topic: str,
        value: Bytes,
        key: Bytes | None = None,
        headers: Iterable[tuple[Bytes, Bytes]] | None = None,
        timeout: float | None = None,
        cancel: CancelToken | None = None,
        *,
        delay: float = 0.0,
    ) -> tuple[int, int]:
        """:meth:`publish` as a coroutine, on mq's asynchronous publish (mq 1.4): while the
        partition is full it waits with no thread of its own. Cancelling the task cancels the
        wait (nothing is then appended, unless the publish ended first) and raises
        ``CancelledError``; ``cancel`` (a :class:`mq.CancelToken`) raises :class:`mq.Cancelled`
        unless the publish ended first. ``delay``: as :meth:`publish`'s (mq 1.5)."""
        if delay_ms(delay):  # mq's single publish has no delay: a batch of one
            hs = None if headers is None else list(headers)
            try:
                r = await self.publish_many_async(
                    topic, [Record(value, key, hs, delay)], timeout, cancel
                )
            except MQError as e:
                for attr in ("results", "published"):
                    e.__dict__.pop(attr, None)
                raise
            return r[0]
        token(cancel)
        tn = ffi.new("char[]", cv.name(topic, "topic"))
        v = cv.data(value, "value")
        vb = ffi.from_buffer(v)
        if key is None:
            kb, kl = _NULL, 0
        else:
            kd = cv.data(key, "key")
            kb, kl = ffi.from_buffer(kd), len(kd)
        if headers is None:
            ha, hc, hkeep = _NULL, 0, None
        else:
            ha, hc, hkeep = cv.headers(headers)
        w = wait_ms(timeout)
        po, oo = ffi.new("int32_t *"), ffi.new("int64_t *")
        h = self._h

        def start(user: Any, tok: Any, c: Any) -> int:
            return int(
                lib.mqw_topic_publish_async(
                    h, tn, kb, kl, vb, len(v), ha, hc, w, tok, po, oo, DONE, user, c
                )
            )

        s, message = await run_native(start, (self, tn, vb, kb, ha, hkeep, po, oo), cancel)
        if s == _UNSUPPORTED:  # the Kafka engine: its blocking publish, in the pool
            return await run_waiting(
                lambda tok: self.publish(topic, value, key, headers, timeout, tok)
            )
        if s:
            raise error_for(s, message)
        return (po[0], oo[0])

    async def publish_many_async(
        self,
        topic: str,
        records: Iterable[PublishItem],
        timeout: float | None = None,
        cancel: CancelToken | None = None,
        *,
        delay: float = 0.0,
    ) -> list[tuple[int, int]]:
        """:meth:`publish_many` as a coroutine, on mq's asynchronous batch publish (mq 1.4): the
        batch goes on partition by partition as room appears, with no thread of its own while it
        waits. Failures carry ``results`` and ``published`` as :meth:`publish_many`'s do;
        cancelling the task cancels the wait and raises ``CancelledError`` (what was appended
        before stays). ``delay`` and :attr:`mq.Record.delay`: as :meth:`publish_many`'s."""
        token(cancel)
        tn = ffi.new("char[]", cv.name(topic, "topic"))
        recs = records if type(records) is list else list(records)
        n = len(recs)
        vd, vl, kd, kl, hcs, hd, hl, dl = calls.pack(recs, delay_ms(delay))
        # The records point into these: referenced until the call ends.
        vb, kb, hb = ffi.from_buffer(vd), ffi.from_buffer(kd), ffi.from_buffer(hd)
        batch = lib.mqpy_batch_new(vb, vl, kb, kl, hcs, hb, hl, dl, n)
        if batch == _NULL:
            raise MemoryError("mq: no memory for a batch")
        batch = ffi.gc(batch, lib.mqpy_batch_free)
        published = ffi.new("size_t *")
        w = wait_ms(timeout)
        h = self._h

        def start(user: Any, tok: Any, c: Any) -> int:
            return int(
                lib.mqw_topic_publish_batch_async(
                    h,
                    tn,
                    batch.records,
                    _RECORD,
                    n,
                    w,
                    tok,
                    batch.results,
                    _RESULT,
                    published,
                    DONE,
                    user,
                    c,
                )
            )

        keep = (self, tn, vb, kb, hb, vl, kl, hcs, hl, dl, batch, published)
        s, message = await run_native(start, keep, cancel)
        if s == _UNSUPPORTED:  # the Kafka engine: its blocking publish, in the pool
            return await run_waiting(
                lambda tok: self.publish_many(topic, recs, timeout, tok, delay=delay)
            )
        if s == 0:
            return calls.results_at(batch.results, n)
        e = error_for(s, message)
        if s in (lib.MQ_FULL, lib.MQ_CLOSED, lib.MQ_CANCELLED) or published[0]:
            e.results = calls.results_at(batch.results, n)  # type: ignore[attr-defined]
        else:
            e.results = [(-1, -1)] * n  # type: ignore[attr-defined]
        e.published = int(published[0])  # type: ignore[attr-defined]
        raise e

    def consume(self, topic: str, group: str, partition: int, *, max: int = 64) -> Messages:
        """The group's messages of one partition as an async iterator, on the asynchronous
        poll, acked when the caller says; see :class:`mq.Messages`."""
        return Messages(self, topic, group, partition, max)

    def stream(
        self,
        topic: str,
        group: str,
        *,
        prefetch: int = 10,
        partitions: Sequence[int] | None = None,
        buffer: int = 16,
    ) -> Stream:
        """A push subscription read as an async iterator; see :class:`mq.Stream`."""
        return Stream(self, topic, group, prefetch=prefetch, partitions=partitions, buffer=buffer)

    def join(
        self,
        topic: str,
        group: str,
        *,
        member_id: str | None = None,
        session_timeout: float = 10.0,
        assignor: Assignor | None = None,
        on_rebalance: RebalanceCallback | None = None,
    ) -> Member:
        """Joins a group as a live member; see :class:`mq.Member`."""
        return Member._join(self, topic, group, member_id, session_timeout, assignor, on_rebalance)


_RESULT = ffi.sizeof("mq_publish_result")
_RECORD = ffi.sizeof("mq_record")
