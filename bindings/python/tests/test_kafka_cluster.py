"""The binding on a real Kafka cluster (docs/KAFKA.md): the Kafka variant only (conftest.py),
against MQ_KAFKA_BOOTSTRAP. Each test makes its own uniquely named topic and deletes it."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator

import pytest

import mq

pytestmark = pytest.mark.kafka


def unique(what: str) -> str:
    return f"py-{what}-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def cluster(kafka_bootstrap: str) -> Iterator[mq.Broker]:
    with mq.Broker(kafka_bootstrap=kafka_bootstrap, kafka_config={"client.id": "mq-python"}) as b:
        yield b


def test_pull_consumption_round_trip_on_the_cluster(cluster: mq.Broker) -> None:
    topic, group = unique("pull"), unique("g")
    cluster.create_topic(topic, partitions=3)
    try:
        assert topic in cluster.topics()
        assert cluster.topic_info(topic).partitions == 3
        cluster.subscribe(topic, group)
        headers = [(b"trace", b"t-1"), (b"trace", b"t-2"), (b"empty", b"")]
        p, o = cluster.publish(topic, b"o-1", key=b"user-a", headers=headers)
        # Kafka's partitioner, computed by mq: the same partition in both.
        assert p == mq.key_partition(b"user-a", 3)
        assert o == 0
        assert cluster.publish(topic, b"o-2", key=b"user-a") == (p, 1)

        msgs = cluster.poll(topic, group, p, max=10, timeout=10.0)
        assert [(m.partition, m.offset, m.value) for m in msgs] == [(p, 0, b"o-1"), (p, 1, b"o-2")]
        assert msgs[0].key == b"user-a"
        assert msgs[0].headers == tuple(headers)  # in order, duplicates kept
        assert msgs[1].headers == ()
        assert [m.delivery_count for m in msgs] == [1, 1]
        # The record's Kafka timestamp (wall clock, milliseconds) in ns.
        assert abs(msgs[0].timestamp_ns - time.time_ns()) < 60 * 10**9

        cluster.ack(topic, group, p, 0)
        info = cluster.group_info(topic, group, p)
        assert (info.committed, info.next, info.in_flight) == (1, 2, 1)
        # A nack rewinds to the committed offset: o-2 comes again, its second delivery.
        cluster.nack(topic, group, p)
        again = cluster.poll(topic, group, p, max=10, timeout=10.0)
        assert [(m.offset, m.value, m.delivery_count) for m in again] == [(1, b"o-2", 2)]
        cluster.ack(topic, group, p, 1)
        assert cluster.group_info(topic, group, p).committed == 2
        assert cluster.poll(topic, group, p, timeout=0.0) == []
        assert group in cluster.groups(topic)
    finally:
        cluster.delete_topic(topic)
    assert topic not in cluster.topics()
    with pytest.raises(mq.NoSuchTopic):
        cluster.publish(topic, b"gone")


def test_a_member_joins_and_polls_its_partitions_on_the_cluster(
    cluster: mq.Broker, kafka_bootstrap: str
) -> None:
    topic, group = unique("member"), unique("g")
    cluster.create_topic(topic, partitions=2)
    try:
        seen: list[int] = []
        with cluster.join(
            topic,
            group,
            member_id="one",
            session_timeout=6.0,
            on_rebalance=lambda m, g: seen.append(g),
        ) as member:
            assert member.id == "one"
            a = member.assignment()
            # Alone in its group: Kafka's group protocol gave it every partition.
            assert (a.generation, a.partitions) == (1, (0, 1))
            # Published by another client, as another process would.
            with mq.Broker(kafka_bootstrap=kafka_bootstrap) as other:
                p, o = other.publish(topic, b"hello", key=b"user-b", headers=[(b"h", b"v")])
            got: list[mq.Message] = []
            deadline = time.monotonic() + 20.0
            while not got and time.monotonic() < deadline:
                got = member.poll(max=4, timeout=1.0)
            assert [(m.partition, m.offset, m.value, m.key) for m in got] == [
                (p, o, b"hello", b"user-b")
            ]
            assert got[0].headers == ((b"h", b"v"),)
            member.ack(p, o)
            assert member.poll(max=4, timeout=0.0) == []
        assert member.closed
        assert seen and seen[0] == 1
        # The ack was a commit in Kafka: a pull consumer of the same group starts after it.
        cluster.subscribe(topic, group)
        assert cluster.group_info(topic, group, p).committed == o + 1
    finally:
        cluster.delete_topic(topic)
    assert topic not in cluster.topics()


def test_a_push_subscription_handles_and_acks_on_the_cluster(cluster: mq.Broker) -> None:
    topic, group = unique("push"), unique("g")
    cluster.create_topic(topic, partitions=2)
    try:
        lock = threading.Condition()
        seen: list[tuple[bytes, int]] = []

        def handle(m: mq.Message) -> bool:
            with lock:
                seen.append((m.value, m.delivery_count))
                lock.notify_all()
            return not (m.value == b"b" and m.delivery_count == 1)  # b fails once: nacked

        with cluster.open_subscription(topic, group, handle, partitions=[0, 1]):
            p = 0
            for v in (b"a", b"b", b"c"):
                p, _ = cluster.publish(topic, v, key=b"same-key")
            with lock:
                assert lock.wait_for(lambda: len(seen) >= 4, timeout=30.0), seen
            # In partition order; b again after its nack (c's count depends on the batches).
            assert seen[:3] == [(b"a", 1), (b"b", 1), (b"b", 2)]
            assert seen[3][0] == b"c"
        # Everything handled was acked: committed to the end of the partition.
        assert cluster.group_info(topic, group, p).committed == cluster.partition_info(topic, p).end
    finally:
        cluster.delete_topic(topic)


def test_what_the_cluster_refuses_is_a_backend_error_or_unsupported(cluster: mq.Broker) -> None:
    topic = unique("refused")
    cluster.create_topic(topic)
    try:
        with pytest.raises(mq.AlreadyExists):
            cluster.create_topic(topic)
        # Dead letters work on Kafka; the dead-letter topic must exist, as in-process.
        dlq = unique("dlq")
        with pytest.raises(mq.NoSuchTopic):
            cluster.subscribe(topic, unique("g"), max_deliveries=3, dead_letter_topic=dlq)
        with pytest.raises(mq.UnsupportedError):  # Kafka's time is the cluster's
            mq.Broker(kafka_bootstrap="127.0.0.1:1", clock=mq.ManualClock())
    finally:
        cluster.delete_topic(topic)


def test_a_delay_is_unsupported_on_the_cluster(cluster: mq.Broker) -> None:
    topic = unique("delay")
    cluster.create_topic(topic)
    try:
        with pytest.raises(mq.UnsupportedError):
            cluster.publish(topic, b"later", delay=1.0)
        with pytest.raises(mq.UnsupportedError):
            cluster.publish_many(topic, [b"now", mq.Record(b"later", delay=1.0)])
        assert cluster.publish_many(topic, [mq.Record(b"now", delay=0)]) == [(0, 0)]
    finally:
        cluster.delete_topic(topic)


def test_share_groups_are_unsupported_on_the_cluster(cluster: mq.Broker) -> None:
    topic, group = unique("share"), unique("g")
    cluster.create_topic(topic)
    try:
        for mode in (mq.ShareMode.ALL, mq.ShareMode.KEY):
            with pytest.raises(mq.UnsupportedError, match="share-consumer API"):
                cluster.subscribe(topic, group, share=mode)
        cluster.subscribe(topic, group)
        with pytest.raises(mq.UnsupportedError, match="share-consumer API"):
            cluster.settle(topic, group, 0, 0, 1, mq.Settle.ACCEPT)
    finally:
        cluster.delete_topic(topic)
