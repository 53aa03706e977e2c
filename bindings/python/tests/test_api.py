"""The broker's calls through the Python API: results, copies, timeouts."""

from __future__ import annotations

import importlib.metadata
import threading

import pytest

import mq


def test_publish_returns_partition_and_offset_keyed_by_kafka_partitioner(broker: mq.Broker) -> None:
    broker.create_topic("orders", partitions=2, capacity=3)
    broker.subscribe("orders", "billing")
    assert broker.publish("orders", b"o-1", key=b"user-a", timeout=0) == (1, 0)
    assert broker.publish("orders", "o-2", key="user-a", timeout=0) == (1, 1)
    assert broker.publish("orders", b"o-4", key=b"user-b", timeout=0) == (0, 0)
    assert mq.key_partition(b"user-a", 2) == 1
    assert mq.murmur2(b"21") == -973932308
    assert mq.murmur2(b"foobar") == -790332482


def test_poll_copies_messages_that_outlive_the_ack(broker: mq.Broker) -> None:
    broker.create_topic("t", capacity=4)
    broker.subscribe("t", "g")
    broker.publish("t", b"v-1", key=b"k")
    broker.publish("t", bytearray(b"v-2"))
    msgs = broker.poll("t", "g", 0, max=10, timeout=0)
    assert [(m.offset, m.key, m.value, m.delivery_count) for m in msgs] == [
        (0, b"k", b"v-1", 1),
        (1, None, b"v-2", 1),
    ]
    broker.ack("t", "g", 0, 1)
    # The log recycles the bytes; the copies stay as they were.
    for i in range(8):
        broker.publish("t", b"x" * 3, timeout=0)
        broker.poll("t", "g", 0, timeout=0)
        broker.ack("t", "g", 0, 2 + i)
    assert msgs[0].value == b"v-1" and msgs[1].value == b"v-2" and msgs[0].topic == "t"


def test_empty_key_differs_from_no_key(broker: mq.Broker) -> None:
    broker.create_topic("t")
    broker.subscribe("t", "g")
    broker.publish("t", b"a", key=b"")
    broker.publish("t", b"b")
    keys = [m.key for m in broker.poll("t", "g", 0, timeout=0)]
    assert keys == [b"", None]


def test_poll_timeout_returns_empty_list(broker: mq.Broker) -> None:
    broker.create_topic("t")
    broker.subscribe("t", "g")
    assert broker.poll("t", "g", 0, timeout=0) == []
    assert broker.poll("t", "g", 0, timeout=0.01) == []


def test_full_is_an_exception_with_nothing_appended(broker: mq.Broker) -> None:
    broker.create_topic("t", capacity=1)
    broker.subscribe("t", "g")
    broker.publish("t", b"1", timeout=0)
    with pytest.raises(mq.Full) as e:
        broker.publish("t", b"2", timeout=0.01)
    assert e.value.status_name == "MQ_FULL" and "full" in e.value.message
    assert broker.partition_info("t", 0).end == 1


def test_publish_waits_for_room_made_by_an_ack(broker: mq.Broker) -> None:
    broker.create_topic("t", capacity=1)
    broker.subscribe("t", "g")
    broker.publish("t", b"1")
    result: list[tuple[int, int]] = []
    th = threading.Thread(target=lambda: result.append(broker.publish("t", b"2", timeout=10)))
    th.start()
    from conftest import wait_until

    wait_until(lambda: broker.partition_info("t", 0).producer_waits == 1, what="publisher waits")
    broker.poll("t", "g", 0, timeout=0)
    broker.ack("t", "g", 0, 0)
    th.join(10)
    assert result == [(0, 1)]


def test_publish_many_batches_keys_and_records(broker: mq.Broker) -> None:
    broker.create_topic("t", partitions=2, capacity=8)
    broker.subscribe("t", "g")
    assert broker.publish_many("t", [b"a", b"b", b"c"]) == [(0, 0), (1, 0), (0, 1)]
    res = broker.publish_many(
        "t", [(b"user-a", b"d"), mq.Record(b"e", key=b"user-a"), mq.Record("f"), (None, b"g")]
    )
    assert res[:2] == [(1, 1), (1, 2)]
    assert [r[1] for r in res[2:]] != [-1, -1]
    assert broker.publish_many("t", []) == []


def test_publish_many_stops_part_way_when_full(broker: mq.Broker) -> None:
    broker.create_topic("t", capacity=2)
    broker.subscribe("t", "g")
    with pytest.raises(mq.Full) as e:
        broker.publish_many("t", [b"1", b"2", b"3"], timeout=0)
    assert e.value.published == 2  # type: ignore[attr-defined]
    assert e.value.results == [(0, 0), (0, 1), (0, -1)]  # type: ignore[attr-defined]


def test_publish_many_invalid_record_appends_nothing(broker: mq.Broker) -> None:
    mq_small = mq.Broker(max_message_bytes=4)
    with mq_small:
        mq_small.create_topic("t")
        mq_small.subscribe("t", "g")
        with pytest.raises(mq.TooLarge):
            mq_small.publish_many("t", [b"ok", b"far too large"])
        assert mq_small.partition_info("t", 0).end == 0


def test_nack_redelivers_and_counts(broker: mq.Broker) -> None:
    broker.create_topic("t")
    broker.subscribe("t", "g")
    broker.publish("t", b"a")
    broker.poll("t", "g", 0, timeout=0)
    broker.nack("t", "g", 0)
    again = broker.poll("t", "g", 0, timeout=0)
    assert [(m.value, m.delivery_count) for m in again] == [(b"a", 2)]


def test_delayed_nack_and_lease_follow_the_manual_clock(clock: mq.ManualClock) -> None:
    with mq.Broker(clock=clock) as b:
        b.create_topic("t", ack_timeout=30.0)
        b.subscribe("t", "g")
        b.publish("t", b"a")
        b.poll("t", "g", 0, timeout=0)
        b.nack("t", "g", 0, delay=5.0)
        assert b.poll("t", "g", 0, timeout=0) == []
        assert b.group_info("t", "g", 0).paused_until_ns == clock.now_ns() + 5 * 10**9
        clock.advance(5.0)
        assert [m.delivery_count for m in b.poll("t", "g", 0, timeout=0)] == [2]
        b.extend_lease("t", "g", 0)
        clock.advance(31.0)
        assert [m.delivery_count for m in b.poll("t", "g", 0, timeout=0)] == [3]


def test_seek_and_out_of_range(broker: mq.Broker) -> None:
    broker.create_topic("t", capacity=8)
    broker.subscribe("t", "g")
    for v in (b"a", b"b", b"c"):
        broker.publish("t", v)
    broker.seek("t", "g", 0, 2)
    assert [m.value for m in broker.poll("t", "g", 0, timeout=0)] == [b"c"]
    broker.seek("t", "g", 0, mq.OFFSET_EARLIEST)
    # the forward seek trimmed 0..1 (no other group held them): earliest is now 2
    assert [m.offset for m in broker.poll("t", "g", 0, timeout=0)] == [2]
    with pytest.raises(mq.OffsetOutOfRange) as e:
        broker.seek("t", "g", 0, 99)
    assert "99" in e.value.message


def test_introspection_dataclasses_and_lists(broker: mq.Broker) -> None:
    broker.create_topic(
        "a",
        partitions=3,
        capacity=5,
        max_bytes=100,
        ack_timeout=2.5,
        retention=mq.Retention.BOUNDED,
        max_age=60.0,
    )
    broker.create_topic("b")
    broker.subscribe("a", "g1")
    broker.subscribe("a", "g2", start=mq.Start.EARLIEST)
    assert broker.topics() == ["a", "b"]
    assert broker.groups("a") == ["g1", "g2"]
    assert broker.groups("b") == []
    info = broker.topic_info("a")
    assert info == mq.TopicInfo(
        partitions=3,
        capacity=5,
        max_bytes=100,
        ack_timeout=2.5,
        retention=mq.Retention.BOUNDED,
        max_age=60.0,
    )
    broker.publish("a", b"x", key=b"k")
    p = mq.key_partition(b"k", 3)
    assert broker.partition_info("a", p).end == 1
    assert broker.group_info("a", "g1", p).lag == 1
    assert broker.describe("a", p) == "log 0..0, backlog 1/5; g1 0/0; g2 0/0"


def test_dead_letters_carry_their_origin(broker: mq.Broker) -> None:
    broker.create_topic("dlq")
    broker.create_topic("t")
    broker.subscribe("dlq", "inspect")
    broker.subscribe("t", "g", max_deliveries=1, dead_letter_topic="dlq")
    broker.publish("t", b"poison", key=b"k")
    broker.poll("t", "g", 0, timeout=0)
    broker.nack("t", "g", 0)
    assert broker.poll("t", "g", 0, timeout=0) == []
    (dl,) = broker.poll("dlq", "inspect", 0, timeout=0)
    assert dl.value == b"poison" and dl.key == b"k"
    assert dl.dead_letter == mq.DeadLetter("t", "g", 0, 0, 1)


def test_bounded_retention_reports_loss(broker: mq.Broker) -> None:
    broker.create_topic("t", capacity=2, retention=mq.Retention.BOUNDED)
    broker.subscribe("t", "g")
    for v in (b"1", b"2", b"3", b"4"):
        broker.publish("t", v, timeout=0)
    msgs = broker.poll("t", "g", 0, timeout=0)
    assert [(m.value, m.lost) for m in msgs] == [(b"3", 2), (b"4", 0)]


def test_round_robin_assignment() -> None:
    assert mq.round_robin(5, 2, 0) == [0, 2, 4]
    assert mq.round_robin(5, 2, 1) == [1, 3]


def test_headers_round_trip(broker: mq.Broker) -> None:
    broker.create_topic("t")
    broker.subscribe("t", "g")
    broker.publish("t", b"v", headers=[(b"h1", b"x"), ("h2", b"")])
    broker.publish_many("t", [mq.Record(b"w", headers=[(b"a", b"b")])])
    msgs = broker.poll("t", "g", 0, timeout=0)
    assert [m.headers for m in msgs] == [((b"h1", b"x"), (b"h2", b"")), ((b"a", b"b"),)]


def test_version_is_checked_and_exposed() -> None:
    from mq import _native

    assert mq.LIBRARY_VERSION == "1.7.0"
    assert _native.BUILT_VERSION == _native.RUNTIME_VERSION == 1_007_000
    # The package's version (pyproject.toml, as installed) is the library's it wraps.
    assert mq.__version__ == importlib.metadata.version("mq") == "1.7.0"
    _native._check_version(1_000_000, 1_002_003)
    with pytest.raises(ImportError, match=r"built for libmq 1\.2"):
        _native._check_version(1_002_000, 1_001_000)
    with pytest.raises(ImportError):
        _native._check_version(1_000_000, 2_000_000)
